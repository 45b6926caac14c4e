// The settings page's forms, the end of its script (app-page-script.ts): the function
// expression there opens the scope these functions share with the views they reload.

/** The admin's forms: each says how it went in its own status line, beside it. */
export const PAGE_FORMS = `
  function bindForms() {
    submit("sender-form", "Sender ID not saved", function () {
      return api("/settings", "PUT", { sender_id: $("sender-id").value }).then(function () { loadSettings(); return "Sender ID saved."; });
    });
    submit("key-form", "API key not replaced", function () {
      return api("/settings", "PUT", { sms_api_key: $("api-key").value }).then(function () { $("api-key").value = ""; loadSettings(); return "API key replaced."; });
    });
    submit("test-form", "Test SMS not sent", function () {
      return api("/test-sms", "POST", { phone: $("test-phone").value, message: $("test-text").value }).then(function (r) {
        follow(r.message_id, 0);
        loadMessages(); loadUsage();
        return "Test SMS queued. Its result shows here and in the list below.";
      });
    });
    submit("optout-form", "Opt-out not added", function () {
      return api("/optouts", "POST", { phone: $("optout-phone").value }).then(function () { $("optout-phone").value = ""; loadOptOuts(); return "Opt-out added."; });
    });
    submit("optin-form", "Opt-out not removed", function () {
      return api("/optouts", "DELETE", { phone: $("optin-phone").value }).then(function (r) {
        $("optin-phone").value = ""; loadOptOuts(); return r.removed ? "Opt-out removed." : "That number was not on the list.";
      });
    });
  }
  // The test SMS's result as it happens: its status, read after 2 s, then half as long again each
  // time (at most 15 s apart), 12 reads in about two minutes: a few test SMS leave the page most
  // of its calls a minute (the server's limit per user).
  function follow(id, tries) {
    if (tries >= 12) return;
    setTimeout(function () {
      api("/messages/" + encodeURIComponent(id)).then(function (m) {
        if (m.status !== "sent" && m.status !== "delivered" && m.status !== "failed") return follow(id, tries + 1);
        if (m.status === "failed") note("test-form", "Test SMS to " + m.phone + " not sent" + (m.error_message ? ": " + m.error_message : "."), "bad");
        else note("test-form", "Test SMS to " + m.phone + ": " + m.status + ".", "ok");
        loadMessages(); loadUsage();
      }).catch(function (error) { note("test-form", "The test SMS's status could not be read: " + error.message, "bad"); });
    }, Math.min(2000 * Math.pow(1.5, tries), 15000));
  }
  // A refusal (a 429 included) shows the server's own words beside the form that was used.
  function submit(id, refused, action) {
    $(id).addEventListener("submit", function (event) {
      event.preventDefault();
      note(id, "Working…", "");
      action().then(function (done) { note(id, done, "ok"); }, function (error) { note(id, refused + ": " + error.message, "bad"); });
    });
  }
  function note(id, text, kind) { var n = $(id).querySelector(".note"); n.textContent = text; n.className = "note" + (kind ? " " + kind : ""); }
})();
`;
