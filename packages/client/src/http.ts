import { configurationError, type RateLimit, TollgateError } from './errors.js';

/** Settings shared by both clients. */
export interface TransportOptions {
  /** Where Tollgate is served, e.g. `https://billing.example.com`. */
  readonly baseUrl: string;
  /** How many times a 429 is retried after its `Retry-After` (GETs, and POSTs with an idempotency key). Default 2. */
  readonly maxRetries?: number;
  /** The `fetch` to use; the platform's by default. */
  readonly fetch?: typeof fetch;
  /** How to wait before a retry; a timer by default (tests and custom schedulers may replace it). */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface RequestSpec {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly token?: string;
  readonly idempotencyKey?: string;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One HTTP exchange with Tollgate: JSON in and out, the error envelope turned into TollgateError. */
export class Transport {
  readonly #baseUrl: string;
  readonly #maxRetries: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: TransportOptions) {
    if (typeof options?.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw configurationError('baseUrl must be an absolute http(s) URL, e.g. https://billing.example.com');
    }
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#maxRetries = options.maxRetries ?? 2;
    const platformFetch = globalThis.fetch?.bind(globalThis);
    this.#fetch = options.fetch ?? platformFetch;
    if (!this.#fetch) throw configurationError('no fetch: pass one in the options');
    this.#sleep = options.sleep ?? defaultSleep;
  }

  async request<T>(spec: RequestSpec): Promise<T> {
    const url = new URL(this.#baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    if (spec.token !== undefined) headers.authorization = `Bearer ${spec.token}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    // A refused request was not applied, but only a GET or an idempotent POST is safe to send twice.
    const retryable = spec.method === 'GET' || spec.idempotencyKey !== undefined;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(url, { method: spec.method, headers, body });
      } catch (cause) {
        throw new TollgateError({
          statusCode: 0,
          error: 'Network Error',
          message: `Tollgate could not be reached at ${this.#baseUrl}`,
          cause,
        });
      }
      if (response.ok) {
        const text = await response.text();
        return (text === '' ? undefined : JSON.parse(text)) as T;
      }
      const error = await errorOf(response);
      if (response.status !== 429 || !retryable || attempt >= this.#maxRetries) throw error;
      await this.#sleep((error.retryAfter ?? 1) * 1000);
    }
  }
}

function numberHeader(response: Response, name: string): number | undefined {
  const value = response.headers.get(name);
  if (value === null || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

function rateLimitOf(response: Response): RateLimit | undefined {
  const limit = numberHeader(response, 'x-ratelimit-limit');
  const remaining = numberHeader(response, 'x-ratelimit-remaining');
  const reset = numberHeader(response, 'x-ratelimit-reset');
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  return { limit, remaining, reset };
}

async function errorOf(response: Response): Promise<TollgateError> {
  let envelope: { statusCode?: unknown; error?: unknown; message?: unknown } = {};
  try {
    envelope = (await response.json()) as typeof envelope;
  } catch {
    // Not Tollgate's envelope (a proxy's page, say): the status speaks for itself.
  }
  return new TollgateError({
    statusCode: typeof envelope.statusCode === 'number' ? envelope.statusCode : response.status,
    error: typeof envelope.error === 'string' ? envelope.error : response.statusText,
    message: typeof envelope.message === 'string' ? envelope.message : `Tollgate answered ${response.status}`,
    rateLimit: rateLimitOf(response),
    retryAfter: numberHeader(response, 'retry-after'),
  });
}
