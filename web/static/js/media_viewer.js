/**
 * The evidence viewer's player for a cited recording: the quoted words play from the file route
 * (or, for a recording fetched from a URL, at its own address), with the transcript around them.
 */
import { byRole, h } from "./dom.js";
import { formatTime, transcriptNote } from "./format.js";
import { fileUrl, locatorText, markedText } from "./viewer.js";

/**
 * When the quoted words are said: the stretches of speech of the chunk (`spoken`) the quote
 * overlaps, else the whole chunk's range.
 */
function quotedRange(locator, text, quote) {
  const at = quote ? text.indexOf(quote) : -1;
  const said = at < 0 ? [] : (locator.spoken || []).filter(([from, to]) => from < at + quote.length && to > at);
  return said.length ? [said[0][2], said[said.length - 1][3]] : [locator.start, locator.end];
}

/**
 * A recording: the built-in player plays the quoted words (a media fragment `#t=start,end`: the
 * browser stops at its end, and a reader can play on), with the transcript around it below, the
 * cited part marked with the quote; each part's time seeks the player there.
 */
export function showMedia(root, evidence, notebookId, quote) {
  const { start, end } = evidence.locator;
  const media = evidence.media || { mime: "", transcript: [{ start, end, text: evidence.text, cited: true }] };
  const [from, to] = quotedRange(evidence.locator, evidence.text, quote);
  // A recording fetched from a URL is not kept here: it plays on its own site, in a new tab, from
  // the second the server's template says how to ask for.
  const originalAt = (seconds) => (media.original_url || "").replace("{t}", String(Math.floor(seconds)));
  const player = media.playable === false
    ? h("p", {}, !media.original_url ? "" : h("a", { href: originalAt(from), target: "_blank", rel: "noopener noreferrer", "data-role": "original-player" }, `Play the original from ${formatTime(from)}`))
    : h((media.mime || "").startsWith("audio/") ? "audio" : "video", {
      controls: true,
      preload: "metadata",
      "data-role": "player",
      src: `${fileUrl(evidence, notebookId)}#t=${from},${to}`,
    });
  player.addEventListener("loadedmetadata", () => {
    if (player.currentTime < from) player.currentTime = from;
  }, { once: true });
  const seek = (at) => () => {
    if (media.playable === false) {
      if (media.original_url) window.open(originalAt(at), "_blank", "noopener");
      return;
    }
    player.currentTime = at;
    player.play().catch(() => {}); // a browser that refuses to play without a gesture still seeks
  };
  const parts = media.transcript.map((part) =>
    h(
      "li",
      { class: part.cited ? "transcript-part cited" : "transcript-part", "data-start": part.start },
      h("button", { type: "button", class: "transcript-time", onclick: seek(part.start), "aria-label": `Play from ${formatTime(part.start)}` }, formatTime(part.start)),
      part.cited ? markedText(part.text, quote) : h("p", { class: "evidence-text" }, part.text),
    ),
  );
  const heard = transcriptNote(evidence.locator.transcript);
  const range = from === start && to === end ? locatorText(evidence.locator) : `${locatorText({ start: from, end: to })}, the quoted words (the passage runs ${locatorText(evidence.locator)})`;
  byRole("viewer-meta", root).textContent = `Plays ${range}${heard}`;
  byRole("viewer-body", root).replaceChildren(player, h("ol", { class: "media-transcript", "data-role": "transcript" }, parts));
}
