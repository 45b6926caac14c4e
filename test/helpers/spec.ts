/** The scopes spec 4.1 lists, written out here so tests do not just agree with the code. */
export const SPEC_SCOPES = [
  "conversations/message.write",
  "conversations/message.readonly",
  "conversations.write",
  "conversations.readonly",
  "contacts.readonly",
  "contacts.write",
  "locations.readonly",
];
