#!/usr/bin/env node
// The `tollgate` command: runs the compiled CLI, compiling first only when the sources changed since
// the last build. Compiler output goes to stderr, so a JSON command's stdout stays exactly its JSON.
import { build, canBuild, staleReason } from './build.js';

const reason = canBuild() ? staleReason() : undefined;
if (reason) {
  process.stderr.write(`tollgate: ${reason}, building dist/ first\n`);
  if (!(await build())) {
    process.stderr.write('tollgate: the build failed (see above)\n');
    process.exit(1);
  }
}
await import('../dist/src/main.js');
