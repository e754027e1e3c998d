/**
 * The evidence viewer: what a citation opens. PDFs render in-app (pdf.js, vendored) at the cited
 * page with the quoted passage highlighted in the text layer, or, for text read by OCR from a scan
 * or an image file, with the boxes of the cited lines drawn over the page; media play from the cited time;
 * text shows the chunk with the passage marked. Web sources open their original URL instead.
 */
import { api, apiBytes, withQuery } from "./api.js";
import { byRole, h } from "./dom.js";
import { formatTime } from "./format.js";
import { showMedia } from "./media_viewer.js";

const PDFJS = new URL("../vendor/pdfjs/pdf.min.mjs", import.meta.url).href;
const PDFJS_WORKER = new URL("../vendor/pdfjs/pdf.worker.min.mjs", import.meta.url).href;
const MAX_SCALE = 1.6;
const EDGE = 40; // characters of a quote's ends used to find it when the middle differs

let pdfjsPromise = null;
function loadPdfjs() {
  pdfjsPromise ??= import(PDFJS).then((pdfjs) => {
    pdfjs.GlobalWorkerOptions.workerSrc = PDFJS_WORKER;
    return pdfjs;
  });
  return pdfjsPromise;
}

/** Where a citation link leads: the original page for web evidence, else the in-app viewer. */
export function citationHref(citation) {
  if (citation.locator && "url" in citation.locator) return citation.open_url || citation.locator.url;
  const path = `/notebooks/${encodeURIComponent(citation.notebook_id)}/evidence/${encodeURIComponent(citation.chunk_id)}`;
  return withQuery(path, { revision: citation.revision_id, quote: citation.quote });
}

export function isWebCitation(citation) {
  return Boolean(citation.locator && "url" in citation.locator);
}

/**
 * " · table 2" for a row of a page's table, " · machine-read (tesseract)" for text OCR read off a
 * scan: readers should know a quote may hold misreadings.
 */
function pageNote(locator) {
  return `${locator.table ? ` · table ${locator.table}` : ""}${locator.ocr ? ` · machine-read (${locator.ocr})` : ""}`;
}

/** A short place name: "p. 12 (printed 37)", "1:05", "line 40". */
export function locatorLabel(locator = {}) {
  if (locator.page) return `p. ${locator.page}${locator.page_label && locator.page_label !== String(locator.page) ? ` (printed ${locator.page_label})` : ""}${pageNote(locator)}`;
  if (locator.start !== undefined) return formatTime(locator.start);
  if (locator.url) return locator.fragment ? `#${locator.fragment}` : "web page";
  if (locator.line !== undefined) return `line ${locator.line}`;
  return "";
}

/** The locator as a heading says it: "Page 12 (printed page 37)", "1:05 to 1:20", "Section #intro of example.org". */
export function locatorText(locator = {}) {
  if (locator.page) {
    const printed = locator.page_label && locator.page_label !== String(locator.page) ? ` (printed page ${locator.page_label})` : "";
    return `Page ${locator.page}${printed}${pageNote(locator)}`;
  }
  if (locator.start !== undefined) {
    return locator.end !== undefined && locator.end > locator.start
      ? `${formatTime(locator.start)} to ${formatTime(locator.end)}`
      : `From ${formatTime(locator.start)}`;
  }
  if (locator.url) {
    let host = locator.url;
    try {
      host = new URL(locator.url).host;
    } catch {
      // not a URL we can parse: name it as it is
    }
    return locator.fragment ? `Section #${locator.fragment} of ${host}` : `Web page at ${host}`;
  }
  if (locator.line !== undefined) return `Line ${locator.line}`;
  return "";
}

/**
 * Where the cited document itself is: a web source's URL at the cited section (new tab), or the
 * attachment's bytes (the file route answers with a download) at the cited page or time.
 */
export function originalLink(evidence, notebookId) {
  const locator = evidence.locator || {};
  if (locator.url) {
    const fragment = locator.fragment ? `#${encodeURIComponent(locator.fragment)}` : "";
    const href = /^https?:/i.test(evidence.open_url || "") ? evidence.open_url : `${locator.url.split("#")[0]}${fragment}`;
    return { href, text: "Open the original page", external: true };
  }
  if (!evidence.source_id) return null;
  if (evidence.media?.playable === false) return { href: evidence.open_url, text: "Open the original recording", external: true };
  if (locator.page && !locator.ocr) return { href: `${fileUrl(evidence, notebookId)}#page=${locator.page}`, text: "Download the original PDF" };
  const at = locator.start !== undefined ? `#t=${locator.start}` : "";
  return { href: `${fileUrl(evidence, notebookId)}${at}`, text: "Download the original file" };
}

/**
 * Letters and digits only, case- and accent-folded, each mapped back to its place in `parts`:
 * PDF text layers and extracted text differ in spacing, hyphenation and punctuation.
 */
function squash(parts) {
  let text = "";
  const origin = [];
  parts.forEach((part, index) => {
    for (let offset = 0; offset < part.length; ) {
      const original = String.fromCodePoint(part.codePointAt(offset));
      const end = offset + original.length;
      for (const char of original.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()) {
        if (/[\p{L}\p{N}]/u.test(char)) {
          text += char;
          origin.push([index, offset, end]);
        }
      }
      offset = end;
    }
  });
  return { text, origin };
}

/** [start, end) in squashed `hay` where `needle` is, allowing its middle to differ. */
function findSpan(hay, needle) {
  if (!needle) return null;
  const exact = hay.indexOf(needle);
  if (exact >= 0) return [exact, exact + needle.length];
  const head = needle.slice(0, EDGE);
  const tail = needle.slice(-EDGE);
  const start = hay.indexOf(head);
  if (start < 0) {
    const end = hay.indexOf(tail);
    return end < 0 ? null : [end, end + tail.length];
  }
  const end = hay.indexOf(tail, start + head.length);
  const limit = start + needle.length * 2 + EDGE;
  return end >= 0 && end + tail.length <= limit ? [start, end + tail.length] : [start, start + head.length];
}

/** Mark `quote` inside the text spans pdf.js laid over the page; returns the first mark. */
function highlightTextLayer(textLayer, quote) {
  const { text, origin } = squash(textLayer.textContentItemsStr);
  const span = findSpan(text, squash([quote]).text);
  if (!span) return null;
  const ranges = new Map(); // item index -> [start, end) of the marked characters
  for (let i = span[0]; i < span[1]; i += 1) {
    const [item, start, end] = origin[i];
    ranges.set(item, [ranges.get(item)?.[0] ?? start, end]);
  }
  let first = null;
  for (const [item, [from, to]] of ranges) {
    const value = textLayer.textContentItemsStr[item];
    const mark = h("mark", { class: "highlight" }, value.slice(from, to));
    textLayer.textDivs[item].replaceChildren(value.slice(0, from), mark, value.slice(to));
    first ??= mark;
  }
  return first;
}

/**
 * Draw the cited lines' boxes (fractions of the page as shown) over `sheet`; returns the first,
 * or null when the locator has none.
 */
function drawBoxes(sheet, boxes = []) {
  const drawn = boxes.map(([left, top, right, bottom]) => {
    const box = h("div", { class: "cited-box", "aria-hidden": "true" });
    Object.assign(box.style, {
      left: `${left * 100}%`, top: `${top * 100}%`, width: `${(right - left) * 100}%`, height: `${(bottom - top) * 100}%`,
    });
    return box;
  });
  sheet.append(...drawn);
  return drawn[0] ?? null;
}

/**
 * The boxes of the OCR lines `quote` spans in the chunk `text` (found as the text layer's quotes
 * are: letters and digits only, its middle allowed to differ); all of them when it is not there.
 */
function quotedBoxes(cited, text, quote) {
  const boxes = cited.boxes ?? [];
  if (!quote || !text || cited.box_spans?.length !== boxes.length) return boxes;
  const { text: hay, origin } = squash([text]);
  const span = findSpan(hay, squash([quote]).text);
  if (!span) return boxes;
  const [start, end] = [origin[span[0]][1], origin[span[1] - 1][2]];
  const quoted = boxes.filter((_, index) => cited.box_spans[index][0] < end && cited.box_spans[index][1] > start);
  return quoted.length ? quoted : boxes;
}

/**
 * Mark the cited passage on a rendered page. Text read by OCR and a table's rows (written
 * differently from the page, each opening with the table's title, which the text layer would
 * match alone): the boxes of the lines the quote spans (`text`: the chunk's). Other text: the
 * quote's own characters in the text layer, else the boxes of the cited lines.
 */
function markCited(sheet, cited, { textLayer = null, quote = "", text = "" }) {
  const boxes = () => (cited.boxes?.length ? drawBoxes(sheet, quotedBoxes(cited, text, quote)) : null);
  const mark = cited.ocr || cited.table
    ? boxes()
    : (quote && textLayer ? highlightTextLayer(textLayer, quote) : null) ?? boxes();
  sheet.dataset.highlighted = mark ? "true" : "false";
  mark?.scrollIntoView({ block: "center" });
}

/** The chunk text with the quote marked (text and web evidence). */
export function markedText(text, quote) {
  const at = quote ? text.indexOf(quote) : -1;
  if (at < 0) return h("p", { class: "evidence-text" }, text);
  return h(
    "p",
    { class: "evidence-text" },
    text.slice(0, at),
    h("mark", { class: "highlight" }, quote),
    text.slice(at + quote.length),
  );
}

export function fileUrl(evidence, notebookId) {
  return withQuery(
    `/api/notebooks/${encodeURIComponent(notebookId)}/sources/${encodeURIComponent(evidence.source_id)}/file`,
    { revision: evidence.revision_id },
  );
}

class PdfView {
  /**
   * `cited`: the citation's locator ({page, page_label, boxes?}); `quote`: the passage to mark
   * there; `text`: the cited chunk's text (where an OCR quote's lines are found).
   */
  constructor(root, pdf, { cited, quote, text, title }) {
    this.root = root;
    this.pdf = pdf;
    this.cited = cited;
    this.quote = quote;
    this.text = text;
    this.title = title;
    this.nav = byRole("viewer-nav", root);
    this.nav.hidden = pdf.numPages < 2;
    this.nav.querySelector('[data-action="prev-page"]').onclick = () => this.show(this.pageNumber - 1);
    this.nav.querySelector('[data-action="next-page"]').onclick = () => this.show(this.pageNumber + 1);
  }

  async show(pageNumber) {
    this.pageNumber = Math.min(Math.max(1, pageNumber), this.pdf.numPages);
    const page = await this.pdf.getPage(this.pageNumber);
    const body = byRole("viewer-body", this.root);
    const available = Math.max(280, body.clientWidth - 4);
    const scale = Math.min(MAX_SCALE, available / page.getViewport({ scale: 1 }).width);
    const viewport = page.getViewport({ scale });
    const ratio = window.devicePixelRatio || 1;
    const canvas = h("canvas", { "aria-hidden": "true" });
    canvas.width = Math.floor(viewport.width * ratio);
    canvas.height = Math.floor(viewport.height * ratio);
    const layer = h("div", { class: "textLayer" });
    const sheet = h("div", { class: "pdf-page", "data-page-number": String(this.pageNumber) }, canvas, layer);
    sheet.style.setProperty("--scale-factor", String(scale));
    sheet.style.width = canvas.style.width = `${Math.floor(viewport.width)}px`;
    sheet.style.height = canvas.style.height = `${Math.floor(viewport.height)}px`;
    body.replaceChildren(sheet);
    this.describe();
    await page.render({
      canvasContext: canvas.getContext("2d"),
      viewport,
      transform: ratio === 1 ? null : [ratio, 0, 0, ratio, 0, 0],
    }).promise;
    const { TextLayer } = await loadPdfjs();
    const textLayer = new TextLayer({ textContentSource: page.streamTextContent(), container: layer, viewport });
    await textLayer.render();
    if (this.pageNumber === this.cited.page) markCited(sheet, this.cited, { textLayer, quote: this.quote, text: this.text });
  }

  describe() {
    const label = this.cited.page === this.pageNumber && this.cited.page_label;
    const printed = label && label !== String(this.pageNumber) ? ` (printed page ${label})` : "";
    const where = this.pageNumber === this.cited.page ? "cited page" : "not the cited page";
    byRole("viewer-meta", this.root).replaceChildren(
      this.title ? h("span", { class: "viewer-title" }, `${this.title} · `) : "",
      h("strong", { "data-role": "viewer-page-number" }, `Page ${this.pageNumber} of ${this.pdf.numPages}`),
      `${printed} · ${where}`,
    );
    const [prev, next] = this.nav.querySelectorAll("button");
    prev.disabled = this.pageNumber <= 1;
    next.disabled = this.pageNumber >= this.pdf.numPages;
  }
}

/**
 * An image file read by OCR, with the cited lines' boxes over it; an image the browser cannot
 * draw (TIFF) or a later frame of a multi-page one shows the extracted passage instead.
 */
async function showImage(root, evidence, target, bytes, quote) {
  const url = URL.createObjectURL(new Blob([bytes]));
  const picture = h("img", { src: url, alt: target.title || "The cited image" });
  try {
    if (evidence.locator.page !== 1) throw new Error(`frame ${evidence.locator.page} of the image cannot be shown`);
    await picture.decode();
  } catch (error) {
    URL.revokeObjectURL(url);
    showText(root, evidence, quote, false);
    byRole("viewer-meta", root).textContent = `${locatorLabel(evidence.locator)} · the image cannot be shown here (${error.message}); this is the text read from it.`;
    return;
  }
  const sheet = h("div", { class: "pdf-page image-page", "data-page-number": String(evidence.locator.page) }, picture);
  byRole("viewer-body", root).replaceChildren(sheet);
  byRole("viewer-meta", root).textContent = `${target.title ? `${target.title} · ` : ""}${locatorText(evidence.locator)}`;
  markCited(sheet, evidence.locator, { quote, text: evidence.text });
}

const PDF_MAGIC = "%PDF-";

/** Whether the file's first kilobyte holds a PDF header (readers accept junk before it). */
function isPdf(bytes) {
  return new TextDecoder("latin1").decode(new Uint8Array(bytes, 0, Math.min(1024, bytes.byteLength))).includes(PDF_MAGIC);
}

/** The PDF (or OCR-read image) at the cited page; if its bytes are gone, the extracted passage instead. */
async function showPdf(root, evidence, target, quote) {
  let bytes;
  try {
    bytes = await apiBytes(fileUrl(evidence, target.notebookId));
  } catch (error) {
    showText(root, evidence, quote, target.original !== false);
    byRole("viewer-meta", root).textContent = `${locatorLabel(evidence.locator)} · the file itself is not available (${error.message}); this is the extracted passage.`;
    return;
  }
  if (!isPdf(bytes)) {
    await showImage(root, evidence, target, bytes, quote);
    return;
  }
  const pdfjs = await loadPdfjs();
  const pdf = await pdfjs.getDocument({ data: bytes, isEvalSupported: false }).promise;
  await new PdfView(root, pdf, { cited: evidence.locator, quote, text: evidence.text, title: target.title || "" }).show(evidence.locator.page);
}

function showText(root, evidence, quote, withOriginal = true) {
  const where = locatorLabel(evidence.locator);
  byRole("viewer-meta", root).textContent = where ? `Cited passage · ${where}` : "Cited passage";
  const body = byRole("viewer-body", root);
  body.replaceChildren(markedText(evidence.text, quote));
  if (withOriginal && evidence.locator?.url) {
    body.prepend(h("p", {}, h("a", { href: evidence.open_url, target: "_blank", rel: "noopener noreferrer" }, "Open the original page")));
  }
}

/** One citation's evidence from the API (rejects with its ApiError: 404 when not found or not visible). */
export function fetchEvidence(target) {
  return api(
    withQuery(
      `/api/notebooks/${encodeURIComponent(target.notebookId)}/evidence/${encodeURIComponent(target.chunkId)}`,
      { revision: target.revisionId },
    ),
  );
}

/**
 * Fill a `[data-role=viewer]` element with one citation's evidence.
 * `target`: {notebookId, chunkId, revisionId, quote?, title?, original?} (`original: false`: the
 * page around the viewer links to the original itself); `evidence`: already fetched, if it was.
 * Resolves to the evidence shown, or null when it could not be shown (the viewer says why).
 */
export async function showEvidence(root, target, evidence = null) {
  root.dataset.state = "loading";
  byRole("viewer-meta", root).textContent = "Loading the cited evidence…";
  byRole("viewer-body", root).replaceChildren();
  byRole("viewer-nav", root).hidden = true;
  const quoteBox = byRole("viewer-quote", root);
  try {
    evidence ??= await fetchEvidence(target);
    const quote = target.quote || evidence.text;
    quoteBox.hidden = false;
    byRole("viewer-quote-text", root).textContent = quote;
    const locator = evidence.locator || {};
    if (locator.page) await showPdf(root, evidence, target, quote);
    else if (locator.start !== undefined) showMedia(root, evidence, target.notebookId, quote);
    else showText(root, evidence, quote, target.original !== false);
    root.dataset.state = "ready";
    return evidence;
  } catch (error) {
    root.dataset.state = "error";
    byRole("viewer-meta", root).textContent = `The evidence could not be shown: ${error.message}`;
    return null;
  }
}
