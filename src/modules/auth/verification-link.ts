import type { App } from '../apps/app.entity.js';

/**
 * The e-mailed link that carries a login or invitation token: the app's custom verification URL with
 * `token` and `appId`, else Tollgate's own `…/auth/verify?token=…&redirect=true`. Built from the
 * configured public base URL alone, never from request headers.
 */
export function verificationLink(publicBaseUrl: string, app: App, token: string): string {
  if (app.customVerificationUrl) {
    const url = new URL(app.customVerificationUrl);
    url.searchParams.set('token', token);
    url.searchParams.set('appId', app.id);
    return url.toString();
  }
  const url = new URL(`${publicBaseUrl}/v1/apps/${encodeURIComponent(app.id)}/auth/verify`);
  url.searchParams.set('token', token);
  url.searchParams.set('redirect', 'true');
  return url.toString();
}
