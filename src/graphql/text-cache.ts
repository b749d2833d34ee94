/** How much text a cache keeps by default: a few hundred typical GraphQL documents. */
const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * What was worked out from recently seen texts (query documents, `Accept` headers), bounded by the bytes
 * of text it keeps: a text larger than the bound is not kept, and the oldest entries go first. Callers send
 * the same few texts again and again; a stranger's stream of unique texts only cycles the cache.
 */
export class BoundedTextCache<T> {
  readonly #entries = new Map<string, T>();
  #bytes = 0;

  constructor(private readonly maxBytes: number = DEFAULT_MAX_BYTES) {}

  /** The bytes of text held, for tests of the bound. */
  get bytes(): number {
    return this.#bytes;
  }

  get(text: string): T | undefined {
    return this.#entries.get(text);
  }

  set(text: string, value: T, bytes: number = Buffer.byteLength(text, 'utf8')): void {
    if (bytes > this.maxBytes) return;
    const known = this.#entries.has(text);
    this.#entries.set(text, value);
    if (known) return;
    this.#bytes += bytes;
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= Buffer.byteLength(oldest, 'utf8');
    }
  }
}
