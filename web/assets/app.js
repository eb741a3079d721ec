// agentctl web: live updates for the server-rendered pages. The pages work
// without this file (read-only, and every form posts); this keeps them
// current over server-sent events. Rows arrive rendered and escaped by the
// server, so nothing here builds markup from data.
(function () {
  "use strict";
  var live = document.getElementById("live");
  function setLive(on) {
    if (live) { live.className = on ? "live on" : "live off"; }
  }

  // stream keeps an EventSource open while the tab is visible: a browser
  // holds at most 6 connections to a host over HTTP/1.1 and each stream
  // keeps one, so hidden tabs let theirs go. Every (re)connection starts
  // over (a snapshot, or the output reset), so nothing is lost meanwhile.
  function stream(url, handlers) {
    var es = null;
    function open() {
      if (es) { return; }
      es = new EventSource(url);
      es.onopen = function () { setLive(true); };
      es.onerror = function () { setLive(false); };
      Object.keys(handlers).forEach(function (name) {
        es.addEventListener(name, function (ev) {
          if (name === "end") { es.close(); es = null; setLive(false); }
          handlers[name](ev);
        });
      });
    }
    function close() { if (es) { es.close(); es = null; setLive(false); } }
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "hidden") { close(); } else { open(); }
    });
    window.addEventListener("pagehide", close);
    window.addEventListener("pageshow", function (ev) { if (ev.persisted) { open(); } });
    if (document.visibilityState !== "hidden") { open(); }
  }

  // The list: a snapshot on every (re)connection, then rows to place or remove.
  var list = document.getElementById("list");
  if (list && window.EventSource) {
    var parts = {
      waiting: document.getElementById("waiting"),
      running: document.getElementById("running"),
      ended: document.getElementById("ended")
    };
    var count = document.getElementById("count");
    var recount = function () {
      if (count) { count.textContent = String(list.querySelectorAll("article.row").length); }
    };
    stream(list.getAttribute("data-events"), {snapshot: function (ev) {
      var d = JSON.parse(ev.data);
      window.agentctlSnapshot = (window.agentctlSnapshot || 0) + 1;
      var warnings = document.getElementById("warnings");
      if (warnings) {
        warnings.textContent = "";
        (d.warnings || []).forEach(function (w) {
          var p = document.createElement("p");
          p.className = "warn";
          p.textContent = w;
          warnings.appendChild(p);
        });
      }
      // The page was rendered from this very list: nothing to redo.
      if (d.hash && d.hash === list.getAttribute("data-hash")) { return; }
      list.setAttribute("data-hash", "");
      parts.waiting.innerHTML = d.waiting;
      parts.running.innerHTML = d.running;
      parts.ended.innerHTML = d.ended;
      recount();
    }, row: function (ev) {
      var d = JSON.parse(ev.data);
      list.setAttribute("data-hash", "");
      var old = document.getElementById("r-" + d.id);
      // A row being answered keeps what the person typed.
      if (old && old.contains(document.activeElement) && document.activeElement.tagName === "INPUT" && d.section === "waiting" && old.classList.contains("waiting")) {
        return;
      }
      if (old) { old.remove(); }
      if (d.html && parts[d.section]) {
        var t = document.createElement("template");
        t.innerHTML = d.html;
        var el = t.content.firstElementChild;
        var part = parts[d.section];
        var next = null;
        for (var c = part.firstElementChild; c; c = c.nextElementSibling) {
          if (c.getAttribute("data-key") > d.key) { next = c; break; }
        }
        part.insertBefore(el, next);
      }
      recount();
      // What the browser tests read: how long each change took to show.
      if (d.ts) {
        var lags = window.agentctlLags = window.agentctlLags || [];
        lags.push({ id: d.id, ms: Date.now() - d.ts });
        if (lags.length > 100) { lags.shift(); }
      }
    }});
  }

  // A session's page: its output, followed.
  var out = document.getElementById("out");
  if (out && window.EventSource) {
    var follow = document.getElementById("follow");
    var partial = null;
    var max = 5000;
    stream(out.getAttribute("data-stream"), {
      reset: function () { out.textContent = ""; partial = null; },
      line: function (ev) {
        var d = JSON.parse(ev.data);
        if (!partial) {
          partial = document.createElement("span");
          out.appendChild(partial);
        }
        partial.innerHTML = d.html + (d.partial ? "" : "\n");
        if (!d.partial) { partial = null; }
        while (out.childNodes.length > max) { out.removeChild(out.firstChild); }
        if (!follow || follow.checked) { out.scrollTop = out.scrollHeight; }
      },
      end: function () {}
    });
  }
  if (out) { out.scrollTop = out.scrollHeight; }
})();
