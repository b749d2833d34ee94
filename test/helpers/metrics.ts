/** Reading `/metrics`' Prometheus text exposition in tests. */

type Labels = Record<string, string>;

/** Every sample of `name` in an exposition, with its labels. */
export function samples(text: string, name: string): Array<{ labels: Labels; value: number }> {
  const found: Array<{ labels: Labels; value: number }> = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels: Labels = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!;
    }
    found.push({ labels, value: Number(match[3]) });
  }
  return found;
}

/** The value of the one sample of `name` whose labels are exactly `labels`; undefined when absent. */
export function value(text: string, name: string, labels: Labels = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return samples(text, name).find((s) => JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}
