// The settings page's script, plain JavaScript carried as a string (no build step). It asks
// HighLevel's frame for the user, trades the encrypted answer for a session token kept in
// this variable only (no cookie: a third-party frame may not keep one), and renders with
// textContent, never HTML, so no text from a message or a gateway can become markup.

export const PAGE_SCRIPT = `"use strict";
(function () {
  var token = null;
  var admin = false;
  var shown = false;
  function $(id) { return document.getElementById(id); }
  function say(text, kind) { var s = $("status"); s.textContent = text; s.className = kind || ""; }

  if (window.parent === window) {
    say("Open this page from your HighLevel sub-account's menu: it signs you in through HighLevel and shows nothing on its own.", "bad");
    return;
  }
  var waiting = setTimeout(function () {
    say("HighLevel did not answer. Open this page from your HighLevel sub-account's menu, then reload it.", "bad");
  }, 5000);
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (token || !data || data.message !== "REQUEST_USER_DATA_RESPONSE" || typeof data.payload !== "string") return;
    clearTimeout(waiting);
    signIn(data.payload);
  });
  window.parent.postMessage({ message: "REQUEST_USER_DATA" }, "*");

  function signIn(payload) {
    fetch("/app/session", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ payload: payload }) })
      .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, body: body }; }); })
      .then(function (r) {
        if (!r.ok) { say("Sign-in refused: " + (r.body.error || "unknown reason"), "bad"); return; }
        token = r.body.token;
        admin = r.body.role === "admin";
        say("Signed in for location " + r.body.location_id + (admin ? " as an admin." : ". Only an admin can change settings."), "ok");
        if (!shown) show();
        shown = true;
      })
      .catch(function () { say("Could not reach the SMS bridge. Reload the page to try again.", "bad"); });
  }

  function api(path, method, body) {
    var init = { method: method || "GET", headers: { authorization: "Bearer " + token } };
    if (body !== undefined) { init.headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch("/app/api" + path, init).then(function (res) {
      return res.json().then(function (json) {
        // A session lasts 15 minutes: ask HighLevel for the user again; the call itself is not repeated.
        if (res.status === 401) { token = null; say("Your session ended; signing in again. Then try once more.", "bad"); window.parent.postMessage({ message: "REQUEST_USER_DATA" }, "*"); }
        if (!res.ok) throw new Error(json.error || ("HTTP " + res.status));
        return json;
      });
    });
  }
  function failed(what) { return function (error) { say(what + ": " + error.message, "bad"); }; }

  function show() {
    $("page").hidden = false;
    var writes = document.querySelectorAll(".admin-only");
    for (var i = 0; i < writes.length; i++) if (!admin) writes[i].remove();
    $("readonly-note").hidden = admin;
    loadSettings(); loadBalance(); loadMessages(); loadOptOuts();
    $("refresh").addEventListener("click", loadMessages);
    if (admin) bindForms();
  }

  function loadSettings() {
    return api("/settings").then(function (s) {
      $("gateway").textContent = s.gateway === "android" ? "Android phone" : "Cast.ph";
      $("key-in-use").textContent = s.key_in_use === "own" ? "your own: " + s.sms_api_key : s.key_in_use === "shared" ? "the shared key" : "none: messages fail until a key is set";
      $("sender-in-use").textContent = s.sender_id_in_use || "the gateway's default";
      if (s.gateway === "android") loadPhone();
      if (admin) return loadSenderIds(s.sender_id);
    }).catch(failed("Settings"));
  }

  function loadSenderIds(current) {
    return api("/sender-ids").then(function (r) {
      var select = $("sender-id");
      select.textContent = "";
      select.appendChild(option("", "The default sender ID"));
      r.sender_ids.forEach(function (s) { select.appendChild(option(s.sender_id, s.sender_id + (s.label ? " (" + s.label + ")" : ""))); });
      if (current && !r.sender_ids.some(function (s) { return s.sender_id === current; })) select.appendChild(option(current, current + " (not approved for this key)"));
      select.value = current || "";
    }).catch(failed("Sender IDs"));
  }
  function option(value, text) { var o = document.createElement("option"); o.value = value; o.textContent = text; return o; }

  function loadBalance() {
    return api("/balance").then(function (b) {
      var el = $("balance");
      el.textContent = b.credits === null ? "unknown" + (b.error ? " (" + b.error + ")" : "") : b.credits + " credits" + (b.low ? ": low, top up soon" : "");
      el.className = b.low || b.credits === null ? "warn" : "";
    }).catch(failed("Balance"));
  }

  function loadPhone() {
    $("phone-label").hidden = false; $("phone").hidden = false; $("phone").textContent = "asking the phone…";
    return api("/phone").then(function (p) {
      $("phone").textContent = (p.status === "ok" ? "healthy: " : p.status === "warn" ? "needs attention: " : "not reachable: ") + p.detail;
      $("phone").className = p.status === "ok" ? "" : "warn";
    }).catch(failed("Phone"));
  }

  function loadMessages() {
    return api("/messages").then(function (r) {
      var body = $("messages");
      body.textContent = "";
      if (r.messages.length === 0) { var row = body.insertRow(); var c = row.insertCell(); c.colSpan = 5; c.textContent = "No messages yet."; }
      r.messages.forEach(function (m) {
        var row = body.insertRow();
        var cells = [["Received", new Date(m.received_at).toLocaleString()], ["To", m.phone], ["Status", m.status], ["Reason", m.error_message || "none"]];
        cells.forEach(function (c) { var td = row.insertCell(); td.setAttribute("data-label", c[0]); td.textContent = c[1]; });
        var b = document.createElement("button");
        b.type = "button"; b.className = "link"; b.textContent = "Show"; b.setAttribute("aria-label", "Timeline of the message to " + m.phone);
        b.addEventListener("click", function () { loadTimeline(m.message_id); });
        row.insertCell().appendChild(b);
      });
    }).catch(failed("Messages"));
  }

  function loadTimeline(id) {
    return api("/messages/" + encodeURIComponent(id)).then(function (m) {
      var box = $("timeline");
      box.textContent = "";
      var h = document.createElement("h3"); h.textContent = "Timeline of the message to " + m.phone; box.appendChild(h);
      var list = document.createElement("ol");
      m.timeline.forEach(function (e) { var li = document.createElement("li"); li.textContent = new Date(e.at).toLocaleString() + ": " + e.event + (e.detail ? " (" + e.detail + ")" : ""); list.appendChild(li); });
      box.appendChild(list);
    }).catch(failed("Timeline"));
  }

  function loadOptOuts() {
    return api("/optouts").then(function (r) {
      var list = $("optouts");
      list.textContent = "";
      if (r.opt_outs.length === 0) { var none = document.createElement("li"); none.textContent = "Nobody has opted out."; list.appendChild(none); }
      r.opt_outs.forEach(function (o) {
        var li = document.createElement("li");
        li.textContent = o.phone + " (by " + o.by + ", " + new Date(o.opted_out_at).toLocaleDateString() + ") ";
        list.appendChild(li);
      });
    }).catch(failed("Opt-outs"));
  }

  function bindForms() {
    submit("sender-form", function () { return api("/settings", "PUT", { sender_id: $("sender-id").value }).then(function () { say("Sender ID saved.", "ok"); return loadSettings(); }); });
    submit("key-form", function () {
      return api("/settings", "PUT", { sms_api_key: $("api-key").value }).then(function () { $("api-key").value = ""; say("API key replaced.", "ok"); loadBalance(); return loadSettings(); });
    });
    submit("test-form", function () {
      return api("/test-sms", "POST", { phone: $("test-phone").value, message: $("test-text").value }).then(function (r) {
        say("Test SMS queued. Its status shows in the list below.", "ok");
        follow(r.message_id, 0);
        return loadMessages();
      });
    });
    submit("optin-form", function () {
      return api("/optouts", "DELETE", { phone: $("optin-phone").value }).then(function (r) {
        $("optin-phone").value = ""; say(r.removed ? "Opt-out removed." : "That number was not on the list.", "ok"); return loadOptOuts();
      });
    });
    submit("optout-form", function () { return api("/optouts", "POST", { phone: $("optout-phone").value }).then(function () { $("optout-phone").value = ""; say("Opt-out added.", "ok"); return loadOptOuts(); }); });
  }
  // The test SMS's result as it happens: its status, read every 2 s until it is settled (at most a minute).
  function follow(id, tries) {
    if (tries >= 30) return;
    setTimeout(function () {
      api("/messages/" + encodeURIComponent(id)).then(function (m) {
        if (m.status === "queued" || m.status === "sending" || m.status === "held") return follow(id, tries + 1);
        say("Test SMS to " + m.phone + ": " + m.status + (m.error_message ? " (" + m.error_message + ")" : ""), m.status === "failed" ? "bad" : "ok");
        loadMessages();
      }).catch(failed("Test SMS"));
    }, 2000);
  }
  function submit(id, action) {
    $(id).addEventListener("submit", function (event) { event.preventDefault(); action().catch(failed("Not saved")); });
  }
})();
`;
