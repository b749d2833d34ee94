// The dashboard's only way to data: GraphQL operations from operations.js (generated from
// src/dashboard/operations.graphql, which codegen checks against the schema), sent to this origin's
// /graphql with the signed-in credential as a bearer header, or with an operator's session cookie and its
// anti-forgery header (operator.js).

const TOKEN_KEY = 'tollgate.dashboard.token';

/** A typed credential lives in this tab's sessionStorage only: never a cookie, never a URL. */
export const credential = {
  get() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/**
 * An operator's anti-forgery token, in memory only (the session itself is an httpOnly cookie the page
 * cannot read); `GET /dashboard/session` gives it again after a reload.
 */
let csrfToken;
export const operatorCsrf = {
  get() {
    return csrfToken;
  },
  set(token) {
    csrfToken = token ?? undefined;
  },
};

/**
 * An app's API key opens the same pages limited to its app (what the API lets a key do); anything else
 * is tried as the admin token.
 */
export function isApiKey(token) {
  return typeof token === 'string' && token.startsWith('tg_sk_');
}

export class ApiError extends Error {
  constructor(message, code, fields = []) {
    super(message);
    this.code = code;
    this.fields = fields;
  }

  /**
   * Validation messages read `field: problem; other: problem`: each problem keyed by its field, so a
   * form can show it beside the input it concerns.
   */
  fieldErrors() {
    const byField = {};
    for (const part of this.message.split('; ')) {
      const match = /^([A-Za-z0-9_.]+): (.+)$/.exec(part);
      if (match && this.fields.includes(match[1])) byField[match[1]] = match[2];
    }
    return byField;
  }
}

const signOutListeners = new Set();

const STATUS_CODES = { 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 429: 'RATE_LIMITED' };

/** Called when the API says the credential is no longer valid (revoked, or the server's token changed). */
export function onCredentialRejected(listener) {
  signOutListeners.add(listener);
  return () => signOutListeners.delete(listener);
}

/** Runs one operation; resolves to its data or rejects with an ApiError whose message is for people. */
export async function request(operation, variables = {}, token = credential.get()) {
  // Without a typed credential, a signed-in operator's cookie goes along with its anti-forgery token.
  const csrf = token ? undefined : operatorCsrf.get();
  const headers = { 'content-type': 'application/json' };
  if (csrf) headers['x-csrf-token'] = csrf;
  else headers.authorization = `Bearer ${token ?? ''}`;
  let response;
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: operation, variables }),
      credentials: csrf ? 'same-origin' : 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError('Tollgate could not be reached. Check the connection and try again.', 'NETWORK');
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`Tollgate answered with HTTP ${response.status} and no readable result.`, 'HTTP');
  }
  const error = body?.errors?.[0];
  if (!error && response.ok && body?.data) return body.data;
  // Refusals made before GraphQL runs (an unknown credential, the rate limit) use the REST error envelope.
  const code = error?.extensions?.code ?? STATUS_CODES[response.status] ?? 'HTTP';
  if (code === 'UNAUTHENTICATED' && token === credential.get()) for (const l of signOutListeners) l();
  const message =
    error?.message ?? (typeof body?.message === 'string' ? body.message : `HTTP ${response.status}`);
  throw new ApiError(message, code, error?.extensions?.fields ?? []);
}

/** The first API key of an app just created: held in memory until the app's page has shown it once. */
export const freshKeys = new Map();
