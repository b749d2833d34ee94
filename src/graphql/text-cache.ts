/** How much text a cache keeps by default: a few hundred typical GraphQL documents. */
const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * What was worked out from recently seen texts (query documents, `Accept` headers, persisted queries),
 * bounded by the bytes of text it keeps: an entry larger than the bound is not kept, and the oldest entries
 * go first. Callers send the same few texts again and again; a stranger's stream of unique texts only
 * cycles the cache. An entry's size is its key's bytes unless the caller says otherwise (a persisted query
 * is keyed by its hash but weighs its text).
 */
export class BoundedTextCache<T> {
  readonly #entries = new Map<string, { readonly value: T; readonly bytes: number }>();
  #bytes = 0;

  constructor(private readonly maxBytes: number = DEFAULT_MAX_BYTES) {}

  /** The bytes of text held, for tests of the bound. */
  get bytes(): number {
    return this.#bytes;
  }

  get(text: string): T | undefined {
    return this.#entries.get(text)?.value;
  }

  set(text: string, value: T, bytes: number = Buffer.byteLength(text, 'utf8')): void {
    if (bytes > this.maxBytes) return;
    const known = this.#entries.get(text);
    if (known) this.#bytes -= known.bytes;
    this.#entries.set(text, { value, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  delete(text: string): boolean {
    const known = this.#entries.get(text);
    if (!known) return false;
    this.#entries.delete(text);
    this.#bytes -= known.bytes;
    return true;
  }
}
