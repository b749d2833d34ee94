/** Prints the run's totals as one plain line (`N passed, N failed`) that any CI log reader understands. */
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
    process.stdout.write(`\ntests: ${line}\n`);
  }
}
