// The settings page's markup and style, carried in the executable as strings (no build step).
// Nothing here is filled in from a request: the script renders the data with textContent.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>SMS settings</title>
<link rel="stylesheet" href="/app/page.css">
<script src="/app/page.js" defer></script>
</head>
<body>
<main>
<header>
<h1>SMS settings</h1>
<p id="who" hidden>Sub-account <strong id="location-name"></strong> <span class="muted">(ID <span id="location-id"></span>)</span></p>
</header>
<p id="status" role="status" aria-live="polite">Connecting to HighLevel…</p>
<div id="page" hidden>
<section aria-labelledby="gw-h">
<h2 id="gw-h">How this sub-account sends SMS</h2>
<dl>
<dt>Sends through</dt><dd id="gateway"></dd>
<dt class="cast-only">API key</dt><dd id="key-in-use" class="cast-only"></dd>
<dt class="cast-only">Sender ID in use</dt><dd id="sender-in-use" class="cast-only"></dd>
<dt class="cast-only">Balance</dt><dd id="balance" class="cast-only">…</dd>
<dt class="phone-only">Phone</dt><dd id="phone" class="phone-only"></dd>
</dl>
<p id="readonly-note" hidden>You can see these settings; a location admin changes them.</p>
<form id="sender-form" class="admin-only cast-only">
<label for="sender-id">Sender ID</label>
<select id="sender-id" name="sender_id"></select>
<button type="submit">Save sender ID</button>
<p class="note" role="status" aria-live="polite"></p>
</form>
<form id="key-form" class="admin-only cast-only">
<label for="api-key">Your own Cast API key (replaces the one in use)</label>
<input id="api-key" name="sms_api_key" type="password" autocomplete="off" required>
<button type="submit">Replace API key</button>
<p class="note" role="status" aria-live="polite"></p>
</form>
</section>
<section aria-labelledby="usage-h" id="usage-section" hidden>
<h2 id="usage-h">Usage in <span id="usage-month"></span></h2>
<dl class="figures">
<div><dt>Messages</dt><dd id="usage-messages"></dd></div>
<div><dt>SMS parts</dt><dd id="usage-parts"></dd></div>
<div><dt>Delivered</dt><dd id="usage-delivered"></dd></div>
<div><dt>Failed</dt><dd id="usage-failed"></dd></div>
<div class="cap" hidden><dt>Monthly limit (SMS parts)</dt><dd id="usage-cap"></dd></div>
<div class="cap" hidden><dt>Left this month</dt><dd id="usage-left"></dd></div>
</dl>
</section>
<section aria-labelledby="test-h" class="admin-only">
<h2 id="test-h">Send a test SMS</h2>
<form id="test-form">
<label for="test-phone">Philippine mobile number</label>
<input id="test-phone" name="phone" type="tel" inputmode="tel" autocomplete="off" required placeholder="0917 123 4567">
<label for="test-text">Message</label>
<textarea id="test-text" name="message" rows="2" maxlength="480">Test message from the SMS settings page.</textarea>
<button type="submit">Send test SMS</button>
<p class="note" role="status" aria-live="polite"></p>
</form>
</section>
<section aria-labelledby="msg-h">
<h2 id="msg-h">Last 50 messages</h2>
<button type="button" id="refresh">Refresh</button>
<div class="scroll"><table>
<caption class="sr">Messages, newest first</caption>
<thead><tr><th scope="col">Received</th><th scope="col">To</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Timeline</th></tr></thead>
<tbody id="messages"></tbody>
</table></div>
<div id="timeline" role="region" aria-live="polite" aria-label="Message timeline"></div>
</section>
<section aria-labelledby="opt-h">
<h2 id="opt-h">Opt-outs</h2>
<ul id="optouts"></ul>
<form id="optout-form" class="admin-only">
<label for="optout-phone">Number to opt out</label>
<input id="optout-phone" name="phone" type="tel" autocomplete="off" required>
<button type="submit">Add opt-out</button>
<p class="note" role="status" aria-live="polite"></p>
</form>
<form id="optin-form" class="admin-only">
<label for="optin-phone">Number to take off the list (it receives messages again)</label>
<input id="optin-phone" name="phone" type="tel" autocomplete="off" required>
<button type="submit">Remove opt-out</button>
<p class="note" role="status" aria-live="polite"></p>
</form>
</section>
</div>
</main>
</body>
</html>
`;

// Contrast: text #1b1f24 on white (16:1), links and buttons #0b4f9c (8:1), errors #a4000f (7.6:1),
// muted text #4a535e (7.9:1).
export const PAGE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#fff}
main{max-width:60rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.25rem 0 0}
header{margin-bottom:1rem}
#who{margin:.25rem 0 0;font-size:1.05rem}
.muted{color:#4a535e;font-size:.9rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
section{border-top:1px solid #c9ced6}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dt{font-weight:600}
dd{margin:0;overflow-wrap:anywhere}
form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.75rem 0}
label{font-weight:600;flex-basis:100%}
input,select,textarea{font:inherit;padding:.45rem .6rem;border:1px solid #5b6570;border-radius:4px;min-height:2.75rem;flex:1 1 14rem;max-width:100%}
button{font:inherit;font-weight:600;padding:.45rem 1rem;min-height:2.75rem;border:0;border-radius:4px;background:#0b4f9c;color:#fff;cursor:pointer}
button.link{background:none;color:#0b4f9c;text-decoration:underline;padding:.25rem;min-height:0}
:focus-visible{outline:3px solid #f0a202;outline-offset:2px}
#status{padding:.5rem .75rem;border-radius:4px;background:#eef3f9}
#status.bad{background:#fdecee;color:#a4000f;font-weight:600}
#status.ok{background:#e8f5ec;color:#17612e}
.warn{color:#a4000f;font-weight:600}
.note{flex-basis:100%;margin:0;min-height:1.5em}
.note.bad{color:#a4000f;font-weight:600}
.note.ok{color:#17612e;font-weight:600}
.figures{display:flex;flex-wrap:wrap;gap:.5rem 2rem;margin-bottom:1rem}
.figures div{min-width:7rem}
.figures dt{font-weight:400;color:#4a535e}
.figures dd{font-size:1.35rem;font-weight:600}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #dfe3e8;vertical-align:top}
ul{padding-left:1.25rem}
@media (max-width:40rem){thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}tr{display:block;padding:.5rem 0;border-bottom:1px solid #dfe3e8}td{display:block;border:0;padding:.1rem 0}td[data-label]::before{content:attr(data-label) ": ";font-weight:600}td:empty{display:none}}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
[hidden]{display:none!important}
`;
