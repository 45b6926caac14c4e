// The settings page's script, plain JavaScript carried as a string (no build step). It asks
// HighLevel's frame for the user, trades the encrypted answer for a session token kept in
// this variable only (no cookie: a third-party frame may not keep one), and renders with
// textContent, never HTML, so no text from a message or a gateway can become markup.
// The page is a tenant's view: it shows nothing of the agency's account (shared balance,
// the phone's address) even when an older API's answer would carry it.

import { PAGE_FORMS } from "./app-page-forms.ts";

export const PAGE_SCRIPT = `"use strict";
(function () {
  var token = null;
  var signing = false;
  var admin = false;
  var shown = false;
  var settings = {};
  var numbers = new Intl.NumberFormat("en-US");
  var KEYS = { own: "Your own key", shared: "Provided by your agency", none: "None: messages fail until a key is set" };
  var PHONE = {
    ok: "Connected and ready to send",
    warn: "Connected, but it needs your agency's attention",
    fail: "Not reachable: check that the phone is on and its SMS app is running",
  };
  var BY = { reply: "replied to stop messages", operator: "added by your agency", page: "added by a location admin" };
  function $(id) { return document.getElementById(id); }
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  function say(text, kind) { var s = $("status"); s.textContent = text; s.className = kind || ""; }
  function count(n) { return typeof n === "number" ? numbers.format(n) : "-"; }
  function askHighLevel() { window.parent.postMessage({ message: "REQUEST_USER_DATA" }, "*"); }

  if (window.parent === window) {
    say("Open this page from your HighLevel sub-account's menu: it signs you in through HighLevel and shows nothing on its own.", "bad");
    return;
  }
  var waiting = setTimeout(function () {
    say("HighLevel did not answer. Open this page from your HighLevel sub-account's menu, then reload it.", "bad");
  }, 5000);
  // Only HighLevel's frame, this page's parent, may sign it in. Any window can post here (a page
  // that opened HighLevel in a window of its own, say), with a payload validly encrypted for its
  // own location: taken, the user would work in that location and type their API key into it.
  // The origin cannot tell (white-label agencies frame HighLevel on their own domains); the source can.
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source !== window.parent || token || signing) return;
    if (!data || data.message !== "REQUEST_USER_DATA_RESPONSE" || typeof data.payload !== "string") return;
    clearTimeout(waiting);
    signIn(data.payload);
  });
  askHighLevel();

  function signIn(payload) {
    signing = true;
    fetch("/app/session", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ payload: payload }) })
      .then(function (res) { return res.json().catch(function () { return {}; }).then(function (body) { return { ok: res.ok, status: res.status, body: body }; }); })
      .then(function (r) {
        signing = false;
        if (!r.ok) return say(refusal(r), "bad");
        token = r.body.token;
        admin = r.body.role === "admin";
        named(r.body.location_id, "");
        say("Signed in. Reading the settings…", "ok");
        if (shown) loadAll(); else show();
        shown = true;
      })
      .catch(function () { signing = false; say("Could not reach the SMS bridge. Reload the page to try again.", "bad"); });
  }
  // A refused sign-in is never the user's doing: HighLevel's answer could not be verified, or
  // the sub-account is not connected to the bridge.
  function refusal(r) {
    var said = String(r.body.error || "");
    if (r.status === 429) return "Too many sign-ins just now" + (said ? " (" + said + ")" : "") + ". Reload the page in a minute.";
    if (/not (installed|connected)|uninstalled/.test(said)) return "This sub-account is not connected to the SMS bridge. Ask your agency to connect it.";
    return "Your HighLevel sign-in could not be verified. Reopen this page from your sub-account's menu in HighLevel; if this keeps happening, ask your agency whether this sub-account is connected to the SMS bridge.";
  }
  function named(id, name) {
    $("who").hidden = false;
    $("location-name").textContent = name || id;
    $("location-id").textContent = id;
    // The id beside the name tells two sub-accounts of one name apart; alone, it is said once.
    $("location-id").parentNode.hidden = !name || name === id;
  }

  function api(path, method, body, tries) {
    var init = { method: method || "GET", headers: { authorization: "Bearer " + token } };
    if (body !== undefined) { init.headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch("/app/api" + path, init).then(function (res) {
      // A read the gateway is too busy for just now (503) is asked again when the server says, a few times.
      var after = Number(res.headers.get("retry-after"));
      if (res.status === 503 && init.method === "GET" && (tries || 0) < 3 && after > 0) {
        return new Promise(function (done) { setTimeout(done, Math.min(after, 10) * 1000); }).then(function () { return api(path, method, body, (tries || 0) + 1); });
      }
      return res.json().catch(function () { return {}; }).then(function (json) {
        // A session lasts 15 minutes: ask HighLevel for the user again; the call itself is not repeated.
        if (res.status === 401) { token = null; say("Your session ended; signing in again. Then try once more.", "bad"); askHighLevel(); }
        if (res.ok) return json;
        var error = new Error(json.error || "the SMS bridge answered " + res.status);
        error.status = res.status;
        throw error;
      });
    });
  }
  function failed(what) { return function (error) { say(what + " could not be read: " + error.message, "bad"); }; }

  function show() {
    $("page").hidden = false;
    each(".admin-only", function (el) { if (!admin) el.remove(); });
    $("readonly-note").hidden = admin;
    $("refresh").addEventListener("click", loadMessages);
    if (admin) bindForms();
    loadAll();
  }
  function loadAll() { loadSettings(); loadUsage(); loadMessages(); loadOptOuts(); }

  function loadSettings() {
    return api("/settings").then(function (s) {
      settings = s;
      var name = s.location_name || s.location_id;
      named(s.location_id, s.location_name);
      say("Signed in to " + name + (admin ? " as an admin." : ". Only an admin can change settings."), "ok");
      var phone = s.gateway === "android";
      each(".cast-only", function (el) { el.hidden = phone; });
      each(".phone-only", function (el) { el.hidden = !phone; });
      $("gateway").textContent = phone ? "An Android phone" : "Cast.ph";
      $("key-in-use").textContent = s.key_in_use === "own" && s.sms_api_key ? KEYS.own + " (" + s.sms_api_key + ")" : KEYS[s.key_in_use] || "";
      $("sender-in-use").textContent = s.sender_id_in_use || "the gateway's default";
      if (phone) return loadPhone();
      loadBalance();
      if (admin) loadSenderIds();
    }).catch(failed("The settings"));
  }

  // A phone location sees its phone's state only: the check's own words name the phone's address.
  function loadPhone() {
    var el = $("phone");
    el.textContent = "asking the phone…";
    return api("/phone").then(function (p) {
      el.textContent = PHONE[p.status] || "Its state is not known just now";
      el.className = p.status === "ok" ? "" : "warn";
    }).catch(function (error) { el.textContent = "Could not be asked just now (" + error.message + ")"; el.className = "warn"; });
  }

  // On the agency's shared key the balance is the agency's, never shown here.
  function loadBalance() {
    var el = $("balance");
    el.className = "";
    if (settings.key_in_use === "shared") { el.textContent = "SMS provided by your agency"; return; }
    if (settings.key_in_use === "none") { el.textContent = "None: no API key is set"; el.className = "warn"; return; }
    return api("/balance").then(function (b) {
      if (b.provided_by === "agency") { el.textContent = b.note || "SMS provided by your agency"; return; }
      if (typeof b.credits !== "number") { el.textContent = "Could not be read just now" + (b.error ? " (" + b.error + ")" : ""); el.className = "warn"; return; }
      el.textContent = count(b.credits) + " credits" + (b.low ? ": low, top up soon" : "");
      el.className = b.low ? "warn" : "";
    }).catch(function (error) { el.textContent = "Could not be read just now (" + error.message + ")"; el.className = "warn"; });
  }

  function loadSenderIds() {
    return api("/sender-ids").then(function (r) {
      // An answer that does not say where its list comes from may be the shared account's whole list: not this sub-account's to see.
      var list = r.source === undefined && settings.key_in_use === "shared" ? [] : r.sender_ids || [];
      var current = settings.sender_id || "";
      var select = $("sender-id");
      select.textContent = "";
      select.appendChild(option("", "The default sender ID"));
      list.forEach(function (s) { select.appendChild(option(s.sender_id, s.sender_id + (s.label ? " (" + s.label + ")" : ""))); });
      if (current && !list.some(function (s) { return s.sender_id === current; })) select.appendChild(option(current, current + " (not in the approved list)"));
      select.value = current;
    }).catch(function (error) { note("sender-form", "The sender IDs could not be read: " + error.message, "bad"); });
  }
  function option(value, text) { var o = document.createElement("option"); o.value = value; o.textContent = text; return o; }

  // The location's own usage; an API without it (404) shows none.
  function loadUsage() {
    return api("/usage").then(function (u) {
      var month = /^(\\d{4})-(\\d{2})$/.exec(u.month || "");
      $("usage-month").textContent = month ? new Date(Date.UTC(+month[1], +month[2] - 1, 1)).toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" }) : "this month";
      ["messages", "parts", "delivered", "failed"].forEach(function (k) { $("usage-" + k).textContent = count(u[k]); });
      var capped = typeof u.monthly_cap === "number";
      document.querySelectorAll("#usage-section .cap").forEach(function (el) { el.hidden = !capped; });
      if (capped) { $("usage-cap").textContent = count(u.monthly_cap); $("usage-left").textContent = count(u.left); }
      $("usage-section").hidden = false;
    }).catch(function (error) { if (error.status !== 404) failed("The usage")(error); });
  }

  function loadMessages() {
    return api("/messages").then(function (r) {
      var body = $("messages");
      body.textContent = "";
      if (r.messages.length === 0) { var c = body.insertRow().insertCell(); c.colSpan = 5; c.textContent = "No messages yet."; }
      r.messages.forEach(function (m) {
        var row = body.insertRow();
        var cells = [["Received", new Date(m.received_at).toLocaleString()], ["To", m.phone], ["Status", statusOf(m)], ["Reason", m.error_message || ""]];
        // An empty cell carries no label, so a message without a reason shows no "Reason:".
        cells.forEach(function (c) { var td = row.insertCell(); if (c[1]) td.setAttribute("data-label", c[0]); td.textContent = c[1]; });
        var b = document.createElement("button");
        b.type = "button"; b.className = "link"; b.textContent = "Show"; b.setAttribute("aria-label", "Timeline of the message to " + m.phone);
        b.addEventListener("click", function () { loadTimeline(m.message_id); });
        row.insertCell().appendChild(b);
      });
    }).catch(failed("The messages"));
  }
  function statusOf(m) {
    var status = String(m.status).replace(/_/g, " ");
    return m.gateway === "android" ? status + ", via the phone" : m.gateway === "cast" ? status + ", via Cast.ph" : status;
  }

  function loadTimeline(id) {
    return api("/messages/" + encodeURIComponent(id)).then(function (m) {
      var box = $("timeline");
      box.textContent = "";
      var h = document.createElement("h3"); h.textContent = "Timeline of the message to " + m.phone; box.appendChild(h);
      var list = document.createElement("ol");
      m.timeline.forEach(function (e) { var li = document.createElement("li"); li.textContent = new Date(e.at).toLocaleString() + ": " + e.event + (e.detail ? " (" + e.detail + ")" : ""); list.appendChild(li); });
      box.appendChild(list);
    }).catch(failed("The timeline"));
  }

  function loadOptOuts() {
    return api("/optouts").then(function (r) {
      var list = $("optouts");
      list.textContent = "";
      if (r.opt_outs.length === 0) { var none = document.createElement("li"); none.textContent = "Nobody has opted out."; list.appendChild(none); }
      r.opt_outs.forEach(function (o) {
        var li = document.createElement("li");
        li.textContent = o.phone + ": " + (BY[o.by] || "added by " + o.by) + ", " + new Date(o.opted_out_at).toLocaleDateString();
        list.appendChild(li);
      });
    }).catch(failed("The opt-outs"));
  }
` + PAGE_FORMS;
