/**
 * How long `tollgate help` takes: `node dist/src/main.js help` (the command line alone) interleaved with
 * the same plus the commands' code (`src/cli-commands.ts`, which loads the whole server, as `help` did
 * before the command line loaded it lazily), BENCH_ROUNDS times each, from spawn to exit. Also
 * `node bin/tollgate.js --help`, the installed command (it checks the build's stamp first). Prints
 * medians and the machine's load, beside the floor (a bare `node` printing one line); exit code 1 when the median `help` is ≥ 300 ms.
 *
 *   npm run build && node bench/cli-help.js   # BENCH_ROUNDS=15
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
const env = { PATH: process.env.PATH };

const kinds = {
  'node alone (the floor)': ['-e', "process.stdout.write('Usage: tollgate')"],
  'main.js help': ['dist/src/main.js', 'help'],
  'bin/tollgate.js --help': ['bin/tollgate.js', '--help'],
  'help + the server code': [
    '--input-type=module',
    '-e',
    "process.argv = [process.argv[0], 'main.js', 'help']; await import('./dist/src/cli-commands.js'); await import('./dist/src/main.js');",
  ],
};

function time(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  if (!String(result.stdout).startsWith('Usage: tollgate')) throw new Error(`${args.join(' ')}: no usage`);
  return ms;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

const samples = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
const loadBefore = loadavg()[0];
for (let round = 0; round < rounds; round++) {
  for (const [kind, args] of Object.entries(kinds)) samples[kind].push(time(args));
}
for (const [kind, values] of Object.entries(samples)) {
  console.log(
    `${kind.padEnd(24)} median ${median(values).toFixed(0)} ms  (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)}, n=${values.length})`,
  );
}
console.log(`load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after`);
process.exitCode = median(samples['main.js help']) >= 300 ? 1 : 0;
