/* Council replay: previous/next question from the keyboard (← → or k j); plain links do the same without JS. */
const NEXT = new Set(["ArrowRight", "j"]);
const PREV = new Set(["ArrowLeft", "k"]);

function typingInto(target) {
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  return tag === "input" || tag === "select" || tag === "textarea" || target.isContentEditable;
}

function follow(id) {
  const link = document.getElementById(id);
  if (link && link.href) {
    window.location.assign(link.href);
    return true;
  }
  return false;
}

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  if (typingInto(event.target)) return;
  if (NEXT.has(event.key) && follow("council-next")) event.preventDefault();
  else if (PREV.has(event.key) && follow("council-prev")) event.preventDefault();
});

// Arriving from a previous/next step: move focus to the transcript so screen readers read the new question.
// (A module runs once the document is parsed.)
if (window.location.hash === "#transcript") {
  const transcript = document.getElementById("transcript");
  if (transcript) transcript.focus({ preventScroll: false });
}
