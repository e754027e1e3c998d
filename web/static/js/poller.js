/**
 * Polling that only happens while someone can see it: a hidden tab makes no requests at all
 * (Page Visibility API), and coming back runs the task at once, then on its interval again.
 */
export class Poller {
  /** `task` is async; `interval()` gives the next delay in ms, or null to pause until `kick()`. */
  constructor(task, interval) {
    this.task = task;
    this.interval = interval;
    this.timer = null;
    this.running = false;
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.kick();
      else this.cancel();
    });
  }

  cancel() {
    clearTimeout(this.timer);
    this.timer = null;
  }

  /** Run now (if visible), then keep the schedule. */
  async kick() {
    this.cancel();
    if (document.visibilityState !== "visible" || this.running) return;
    this.running = true;
    try {
      await this.task();
    } catch (error) {
      console.warn("poll failed:", error.message);
    } finally {
      this.running = false;
    }
    this.schedule();
  }

  schedule() {
    this.cancel();
    const delay = this.interval();
    if (delay === null || document.visibilityState !== "visible") return;
    this.timer = setTimeout(() => this.kick(), delay);
  }
}
