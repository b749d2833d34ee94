/**
 * The one way tests wait for something that happens off the request path (a webhook, an e-mail, a
 * background write, a process's output): poll until `probe` gives a value other than undefined, or
 * fail at the deadline. A probe that throws fails at once: an unexpected answer is not a reason to wait.
 */

export interface EventuallyOptions {
  /** What is awaited, for the failure message (e.g. 'the subscription to be canceled'). */
  readonly what?: string;
  /** Default 10 s: generous, because the machine may be loaded; a passing test never waits it out. */
  readonly timeoutMs?: number;
  /** Pause between probes; default 25 ms. */
  readonly intervalMs?: number;
}

export async function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  options: EventuallyOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 25 } = options;
  // Made here so that its stack points at the waiting test, not at a timer.
  const failure = new Error();
  const deadline = Date.now() + timeoutMs;
  let probes = 0;
  for (;;) {
    const value = await probe();
    probes += 1;
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const what = options.what ?? `\`${String(probe).replace(/\s+/g, ' ').slice(0, 160)}\` to give a value`;
      failure.message = `eventually: gave up after ${timeoutMs} ms (${probes} probes) waiting for ${what}`;
      throw failure;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
