/**
 * Work to finish before the process exits on its own (e.g. sending the last batch of spans). Kept apart
 * from the tracing module so the command line can run it without loading OpenTelemetry.
 */
const tasks: Array<() => Promise<void>> = [];

export function beforeExit(task: () => Promise<void>): void {
  tasks.push(task);
}

/** Runs every task; failures are ignored (the process is stopping, and nothing is left to tell). */
export async function runBeforeExit(): Promise<void> {
  await Promise.all(tasks.map((task) => task().catch(() => undefined)));
}
