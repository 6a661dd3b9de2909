// Council replay: previous/next question from the keyboard (← → or k j); plain links do the same without JS.
(function () {
  "use strict";
  var NEXT = { ArrowRight: true, j: true };
  var PREV = { ArrowLeft: true, k: true };

  function typingInto(target) {
    if (!target || !target.tagName) { return false; }
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "select" || tag === "textarea" || target.isContentEditable;
  }

  function follow(id) {
    var link = document.getElementById(id);
    if (link && link.href) { window.location.assign(link.href); return true; }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    if (typingInto(event.target)) { return; }
    if (NEXT[event.key] && follow("council-next")) { event.preventDefault(); }
    else if (PREV[event.key] && follow("council-prev")) { event.preventDefault(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    // Arriving from a previous/next step: move focus to the transcript so screen readers read the new question.
    if (window.location.hash === "#transcript") {
      var transcript = document.getElementById("transcript");
      if (transcript) { transcript.focus({ preventScroll: false }); }
    }
  });
})();
