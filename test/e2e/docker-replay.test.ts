import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * CI proves the image with `scripts/docker-replay.sh` (the full build and a production start). These
 * tests hold the replay itself to its promise on small Dockerfiles: it follows the file's steps in
 * order, and a broken build or an instruction it cannot replay fails it instead of being skipped.
 */
function replay(dockerfile: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['scripts/docker-replay.sh', '--build-only'], {
      env: { ...process.env, DOCKERFILE: dockerfile },
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

const nodeMajor = process.versions.node.split('.')[0];

describe('docker replay', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-replay-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function dockerfile(name: string, text: string): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  }

  it('replays the steps in order, each stage in its own directory, and copies between stages', async () => {
    const file = await dockerfile(
      'ok.Dockerfile',
      `FROM node:${nodeMajor}-slim AS build
WORKDIR /app
COPY package.json tsconfig.json ./
RUN test -f package.json && test -f tsconfig.json \\
    && mkdir -p out && echo built > out/marker
FROM node:${nodeMajor}-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/out ./node_modules
RUN test "$NODE_ENV" = production && test "$(cat node_modules/marker)" = built
CMD ["node", "-e", "0"]
`,
    );
    const result = await replay(file);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const steps = result.stdout.split('\n').filter((line) => /^replay: \[\w+\] [A-Z]+ /.test(line));
    expect(steps).toEqual([
      `replay: [build] FROM node:${nodeMajor}-slim (Node ${process.version} stands in)`,
      'replay: [build] WORKDIR /app',
      'replay: [build] COPY package.json tsconfig.json ./',
      'replay: [build] RUN test -f package.json && test -f tsconfig.json     && mkdir -p out && echo built > out/marker',
      `replay: [runtime] FROM node:${nodeMajor}-slim (Node ${process.version} stands in)`,
      'replay: [runtime] ENV NODE_ENV=production',
      'replay: [runtime] WORKDIR /app',
      'replay: [runtime] COPY --from=build /app/out ./node_modules',
      'replay: [runtime] RUN test "$NODE_ENV" = production && test "$(cat node_modules/marker)" = built',
      'replay: [runtime] CMD ["node", "-e", "0"]',
    ]);
  });

  it('fails on the first build step that fails, and runs none after it', async () => {
    const file = await dockerfile(
      'broken.Dockerfile',
      `FROM node:${nodeMajor}-slim AS build
WORKDIR /app
RUN exit 3
RUN echo never
CMD ["node", "-e", "0"]
`,
    );
    const result = await replay(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('replay: FAILED: [build] RUN exit 3\n');
    expect(result.stdout).not.toContain('never');
  });

  it('fails when a COPY source is missing from the build context', async () => {
    const file = await dockerfile(
      'missing.Dockerfile',
      `FROM node:${nodeMajor}-slim\nWORKDIR /app\nCOPY no-such-dir ./x\nCMD ["node"]\n`,
    );
    const result = await replay(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('replay: FAILED: [stage0] COPY: no-such-dir does not exist\n');
  });

  it('refuses an instruction it cannot replay instead of skipping it', async () => {
    const file = await dockerfile(
      'add.Dockerfile',
      `FROM node:${nodeMajor}-slim\nWORKDIR /app\nADD package.json ./\nCMD ["node"]\n`,
    );
    const result = await replay(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'replay: FAILED: instruction ADD is not replayed; teach scripts/docker-replay.sh before using it: ADD package.json ./\n',
    );
  });

  it('refuses a base image whose Node major this machine cannot stand in for', async () => {
    const file = await dockerfile('old.Dockerfile', 'FROM node:18-slim\nCMD ["node"]\n');
    const result = await replay(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `replay: FAILED: stage stage0 is built FROM node:18-slim but this machine runs Node ${nodeMajor}\n`,
    );
  });
});
