import { Writable } from 'node:stream';

/** A stream to hand a logger, and the lines written to it, one entry per line. */
export function logLines(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      callback();
    },
  });
  return { lines, stream };
}
