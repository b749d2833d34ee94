/**
 * An operation run at most once at a time, whose callers share runs. A caller arriving while a run is in
 * flight cannot rely on it (it began before the caller's moment), so it waits for the next run, which
 * every caller arriving meanwhile shares: under load one run serves many callers, and none is served by
 * a run that began before it asked. `run` should not reject (a rejection reaches every caller sharing it).
 */
export class CoalescedRuns<T> {
  #inFlight: Promise<T> | undefined;
  #queued: Promise<T> | undefined;

  constructor(private readonly run: () => Promise<T>) {}

  /** The result of a run that begins at or after this call. */
  next(): Promise<T> {
    if (!this.#inFlight) {
      this.#inFlight = this.run().finally(() => {
        this.#inFlight = undefined;
      });
      return this.#inFlight;
    }
    this.#queued ??= this.#inFlight.then(() => {
      this.#queued = undefined;
      return this.next();
    });
    return this.#queued;
  }
}
