/** Words for states, shared by the library and the notebook page. */

const ACTIVE_JOB_STATES = ["queued", "running", "cancelling"];

export function jobActive(job) {
  return Boolean(job && ACTIVE_JOB_STATES.includes(job.state));
}

/** One status line for a notebook: what a reader needs to know before opening it. */
export function notebookStatus(detail) {
  const job = detail.job;
  if (jobActive(job)) {
    if (job.state === "queued") return "Queued";
    if (job.state === "cancelling") return "Cancelling";
    return job.total ? `Indexing ${job.done} of ${job.total}` : "Checking sources";
  }
  if (detail.active_revision) {
    const failing = detail.failing_count ? ` · ${detail.failing_count} error${detail.failing_count === 1 ? "" : "s"}` : "";
    if (job && job.state === "failed") return `Ready (last refresh failed)${failing}`;
    return `Ready${failing}`;
  }
  if (job && job.state === "cancelled") return "Cancelled before the first index";
  if (job && job.state === "failed") return "Failed";
  return "Waiting for sources";
}

export const VISIBILITY = { private: "Private", workspace: "Workspace" };
export const MODE = { private: "Private threads", shared: "Shared transcript" };

export const STATE_LABEL = {
  pending: "Pending",
  indexing: "Indexing",
  available: "Available",
  stale: "Stale",
  error: "Error",
};

export function formatTime(seconds) {
  const total = Math.floor(seconds);
  const parts = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  const [hours, minutes, secs] = parts.map((n) => String(n).padStart(2, "0"));
  return total >= 3600 ? `${hours}:${minutes}:${secs}` : `${Number(minutes)}:${secs}`;
}

// How pipeline/extractors/subtitles.py labels a transcript that people wrote: a site's subtitles
// or an attached subtitles file. Any other label names the speech model that transcribed it.
const SUBTITLES = /^(site subtitles|subtitles file)\b/;

/** What wrote a recording's transcript, as the sources panel and the viewer say it. */
export function transcriptNote(by) {
  if (!by) return "";
  return SUBTITLES.test(by) ? ` · transcript: ${by}` : ` · machine-transcribed (${by})`;
}
