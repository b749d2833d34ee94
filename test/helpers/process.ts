import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Path of the compiled CLI (`npm test` builds before running). */
export const CLI = 'dist/src/main.js';

/** The `tollgate` command as installed (package.json `bin`): builds dist/ only when it is stale. */
export const BIN = 'bin/tollgate.js';

export interface RunOptions {
  /** The entry script (default the compiled CLI; BIN for the installed command). */
  readonly entry?: string;
  /** Options for node itself, before the script. */
  readonly nodeOptions?: readonly string[];
}

/** Runs the CLI to completion. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  { entry = CLI, nodeOptions = [] }: RunOptions = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeOptions, entry, ...args], {
      env: { PATH: process.env.PATH, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a long-running CLI process and collects its output. */
export function startCli(args: string[], env: Record<string, string | undefined>) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, ...env },
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => {
    output.stdout += d;
  });
  child.stderr.on('data', (d) => {
    output.stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output, exited };
}
