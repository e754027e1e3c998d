/**
 * Citation links as chat answers and analysis results show them: a link to the cited passage that
 * opens the in-app evidence viewer (the page's "Cited evidence" dialog) on a plain click, and the
 * original page in a new tab for web evidence. Both panels go through here, so a citation opens
 * the same way wherever it is shown.
 */
import { byRole, h } from "./dom.js";
import { citationHref, isWebCitation, locatorLabel, showEvidence } from "./viewer.js";

const QUOTE_PREVIEW = 220;

const linked = new WeakMap(); // link -> the citation it opens
const wiredDialogs = new WeakSet();

/** `kind` names the link for screen readers: a citation, or a related passage under a refusal. */
export function citationLink(citation, number, text, kind = "Citation") {
  const web = isWebCitation(citation);
  const link = h("a", {
    class: "cite",
    href: citationHref(citation),
    "data-citation": String(number),
    "aria-label": `${kind} ${number}: ${citation.title}, ${locatorLabel(citation.locator)}${web ? " (opens the web page in a new tab)" : ""}`,
    target: web ? "_blank" : null,
    rel: web ? "noopener noreferrer" : null,
  }, text);
  linked.set(link, citation);
  return link;
}

/** One entry of a list of citations: "Title · p. 12", then the quoted passage unless `quote` is false. */
export function citationItem(citation, number, { kind = "Citation", quote = true } = {}) {
  const text = citation.quote || "";
  return h("li", {},
    citationLink(citation, number, `${citation.title} · ${locatorLabel(citation.locator)}`, kind),
    quote && text ? h("q", { class: "muted" }, text.length > QUOTE_PREVIEW ? `${text.slice(0, QUOTE_PREVIEW)}…` : text) : null);
}

/**
 * Open the citation links inside `container` in `dialog`'s viewer. Web citations, and clicks with
 * a modifier key or another button, keep the browser's own way (a new tab, a download).
 */
export function openCitationsIn(container, dialog) {
  container.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-citation]");
    const citation = link && linked.get(link);
    if (!citation || isWebCitation(citation) || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    showInViewer(dialog, {
      notebookId: citation.notebook_id,
      chunkId: citation.chunk_id,
      revisionId: citation.revision_id,
      quote: citation.quote,
      title: citation.title,
    }, citation.evidence || null);  // a knowledge passage carries its evidence: it is no chunk to look up
  });
}

/** Open `dialog`'s viewer on `target` (with its `evidence` when the caller has it already). */
export function showInViewer(dialog, target, evidence = null) {
  if (!wiredDialogs.has(dialog)) {
    wiredDialogs.add(dialog);
    dialog.querySelector('[data-action="close"]').addEventListener("click", () => dialog.close());
  }
  dialog.showModal();
  return showEvidence(byRole("viewer", dialog), target, evidence);
}
