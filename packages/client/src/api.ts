import type { RequestOptions, Transport } from './http.js';
import type { PostOptions } from './types.js';

export type Query = Readonly<Record<string, string | number | undefined>>;

/**
 * The API key's requests, for the resources (resources/*.ts): each resource is a small class over this,
 * so a new part of the API is one new file and one line in server.ts.
 */
export class ApiRequester {
  constructor(
    private readonly transport: Transport,
    private readonly token: string,
  ) {}

  get<T>(path: string, query?: Query, options?: RequestOptions): Promise<T> {
    return this.transport.request<T>({ method: 'GET', path, query, token: this.token }, options);
  }

  post<T>(path: string, body: unknown, options: PostOptions = {}): Promise<T> {
    const { idempotencyKey, ...rest } = options;
    return this.transport.request<T>({ method: 'POST', path, body, token: this.token, idempotencyKey }, rest);
  }

  patch<T>(path: string, body: unknown, options?: RequestOptions): Promise<T> {
    return this.transport.request<T>({ method: 'PATCH', path, body, token: this.token }, options);
  }

  delete<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.transport.request<T>({ method: 'DELETE', path, token: this.token }, options);
  }
}

export const segment = (id: string): string => encodeURIComponent(id);
