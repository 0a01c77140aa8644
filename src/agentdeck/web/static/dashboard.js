// agentdeck dashboard: the little that htmx does not do for us.
(function () {
  "use strict";

  function fmt(secs) {
    secs = Math.max(0, Math.floor(secs));
    if (secs < 60) return secs + "s";
    if (secs < 3600) return Math.floor(secs / 60) + "m " + String(secs % 60).padStart(2, "0") + "s";
    return Math.floor(secs / 3600) + "h " + String(Math.floor((secs % 3600) / 60)).padStart(2, "0") + "m";
  }

  // Elapsed times of live agents tick between server updates.
  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = fmt(now - parseFloat(el.dataset.since));
    });
    // Approval deadlines count down.
    document.querySelectorAll("[data-until]").forEach(function (el) {
      var left = parseFloat(el.dataset.until) - now;
      el.textContent = left > 0 ? fmt(left) : "a moment";
    });
  }
  setInterval(tick, 1000);

  // Feeds keep at most data-max entries.
  function trim() {
    document.querySelectorAll("ol[data-max]").forEach(function (list) {
      var max = parseInt(list.dataset.max, 10);
      while (list.children.length > max) list.removeChild(list.lastElementChild);
    });
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
  }
  var stick = false;

  document.addEventListener("htmx:sseBeforeMessage", function () {
    stick = nearBottom();
  });
  // In the inbox, an answered request moves from "Pending" to the top of "Answered".
  function fileAnswered() {
    [["pending-approvals", "answered-approvals", ".approval:not(.approval-pending)"],
     ["pending-asks", "answered-asks", ".ask:not(.ask-pending)"]].forEach(function (ids) {
      var pending = document.getElementById(ids[0]);
      var answered = document.getElementById(ids[1]);
      if (!pending || !answered) return;
      pending.querySelectorAll(ids[2]).forEach(function (card) {
        answered.insertBefore(card, answered.firstChild);
      });
    });
  }
  document.addEventListener("htmx:afterSettle", fileAnswered);

  document.addEventListener("htmx:sseMessage", function () {
    fileAnswered();
    trim();
    if (stick && document.getElementById("transcript")) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });

  // The text an agent is writing (event: partial, never stored), shown as it comes:
  // a plain-text entry at the end of the transcript, replaced by the text's own
  // entry (markdown) when it arrives. An edit keeps `offset` characters of what was
  // shown for its block and appends `text`; one that cannot apply is left to the entry.
  var writing = { block: null, text: "", el: null };
  function writingEntry() {
    var list = document.getElementById("transcript");
    if (!list) return null;
    if (!writing.el) {
      var li = document.createElement("li");
      li.className = "item ev-assistant-text writing";
      li.setAttribute("aria-live", "polite");
      li.setAttribute("aria-busy", "true");
      var time = document.createElement("time");
      time.className = "mono muted";
      time.textContent = "writing…";
      var body = document.createElement("div");
      body.className = "body";
      var text = document.createElement("div");
      text.className = "assistant writing-text";
      text.style.whiteSpace = "pre-wrap";
      body.appendChild(text);
      li.appendChild(time);
      li.appendChild(body);
      writing.el = li;
    }
    if (list.lastElementChild !== writing.el) list.appendChild(writing.el);
    return writing.el;
  }
  function dropWriting() {
    if (writing.el && writing.el.parentNode) writing.el.parentNode.removeChild(writing.el);
    writing = { block: null, text: "", el: null };
  }
  document.addEventListener("htmx:sseBeforeMessage", function (evt) {
    var msg = evt.detail;
    if (!msg || msg.type !== "partial") return;
    evt.preventDefault(); // not HTML: nothing for htmx to swap
    var edit;
    try { edit = JSON.parse(msg.data); } catch (e) { return; }
    if (!edit || typeof edit.text !== "string" || edit.parent_tool_use_id) return;
    if (edit.block !== writing.block) {
      if (edit.offset !== 0) return; // joined mid-block: its entry will show it
      dropWriting();
      writing.block = edit.block;
    }
    if (edit.offset > writing.text.length) return; // an edit missed
    writing.text = writing.text.slice(0, edit.offset) + edit.text;
    var follow = nearBottom();
    var li = writingEntry();
    if (!li) return;
    li.querySelector(".writing-text").textContent = writing.text; // text, never HTML
    if (follow) window.scrollTo(0, document.body.scrollHeight);
  });
  document.addEventListener("htmx:sseMessage", function (evt) {
    if (!writing.el) return;
    var data = (evt.detail && evt.detail.data) || "";
    // The text whole, or the turn over without it (interrupted): the entry goes.
    if (/ev-(assistant-text|turn-completed|state-changed)/.test(data)) dropWriting();
    else writingEntry(); // still the last entry
  });

  // A replayed message (after a reconnect) must not add an entry twice.
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var frag = evt.detail.fragment;
    var first = frag && frag.firstElementChild;
    var once = first && (first.id.indexOf("ev-") === 0 || first.hasAttribute("data-once"));
    if (first && first.id && once && document.getElementById(first.id)) {
      evt.detail.shouldSwap = false;
    }
  });

  // A tool result whose call is on an older page: show it on its own.
  document.addEventListener("htmx:oobErrorNoTarget", function (evt) {
    var el = evt.detail.content;
    var target = el && el.dataset && el.dataset.fallback && document.querySelector(el.dataset.fallback);
    if (target) {
      el.removeAttribute("id");
      var li = document.createElement("li");
      li.className = "item ev-tool-returned";
      li.appendChild(el);
      target.appendChild(li);
    }
  });

  // An approval answered twice (409) or refused: show the card's message anyway.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var status = evt.detail.xhr.status;
    var elt = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    if (status >= 400 && status < 500 && elt && elt.closest && elt.closest(".approval, .ask")) {
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
    }
  });

  // Forms marked data-reset-on-success are cleared once htmx has posted them.
  document.addEventListener("htmx:afterRequest", function (evt) {
    var form = evt.detail.elt;
    if (evt.detail.successful && form.matches && form.matches("form[data-reset-on-success]")) {
      form.reset();
    }
  });

  // The board's tree: a parent's children fold away, and stay folded across
  // live updates and page loads.
  var FOLDED = "agentdeck.folded";
  function folded() {
    try { return JSON.parse(localStorage.getItem(FOLDED) || "[]"); } catch (e) { return []; }
  }
  function applyFolds() {
    var ids = folded();
    document.querySelectorAll(".tree-toggle").forEach(function (button) {
      var id = button.getAttribute("aria-controls");
      var box = document.getElementById(id);
      var shut = ids.indexOf(id) >= 0;
      button.setAttribute("aria-expanded", shut ? "false" : "true");
      if (box) box.hidden = shut;
    });
  }
  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest(".tree-toggle");
    if (!button) return;
    evt.preventDefault();
    var id = button.getAttribute("aria-controls");
    var ids = folded().filter(function (x) { return x !== id; });
    if (button.getAttribute("aria-expanded") === "true") ids.push(id);
    try { localStorage.setItem(FOLDED, JSON.stringify(ids.slice(-500))); } catch (e) { /* private mode */ }
    applyFolds();
  });
  document.addEventListener("htmx:afterSettle", applyFolds);
  document.addEventListener("htmx:sseMessage", applyFolds);

  document.addEventListener("DOMContentLoaded", function () {
    applyFolds();
    if (document.getElementById("transcript") && !location.search.includes("before=")) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });
})();
