/** Prints the run's totals as one plain line (`N passed, N failed`) that any CI log reader understands. */
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
    // A suite skipped for a missing requirement says so in its name (test/helpers/requirements.ts).
    const reasons = new Set();
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        const suite = test.ancestorTitles[0] ?? '';
        if (test.status === 'pending' && suite.includes('(skipped: ')) reasons.add(suite);
      }
    }
    for (const reason of reasons) process.stdout.write(`\nskipped suite: ${reason}`);
    if (reasons.size > 0)
      process.stdout.write('\n(TOLLGATE_REQUIRE_ALL_TESTS=1 turns these into failures)\n');
    process.stdout.write(`\ntests: ${line}\n`);
  }
}
