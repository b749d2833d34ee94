/** Time as a port, so expiry rules can be tested by moving a clock instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; used by tests. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: Date = new Date()) {
    this.#now = start.getTime();
  }
  now(): Date {
    return new Date(this.#now);
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(date: Date): void {
    this.#now = date.getTime();
  }
}
