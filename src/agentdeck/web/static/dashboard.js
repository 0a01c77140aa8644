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
    var pending = document.getElementById("pending-approvals");
    var answered = document.getElementById("answered-approvals");
    if (!pending || !answered) return;
    pending.querySelectorAll(".approval:not(.approval-pending)").forEach(function (card) {
      answered.insertBefore(card, answered.firstChild);
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
    if (status >= 400 && status < 500 && elt && elt.closest && elt.closest(".approval")) {
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

  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("transcript") && !location.search.includes("before=")) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });
})();
