import { randomBytes } from 'node:crypto';
import { ADMIN } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { eventually } from './eventually.js';
import type { TestServer } from './server.js';

/** Creates an app through the core (as the admin CLI does); returns its id and first API key. */
export async function createAuthApp(
  server: TestServer,
  settings: Record<string, unknown> = {},
): Promise<{ appId: string; apiKey: string }> {
  const { app, apiKey } = await withContext(server.deps.orm, () =>
    server.services.apps.createApp(ADMIN, { name: `auth-${randomBytes(4).toString('hex')}`, ...settings }),
  );
  return { appId: app.id, apiKey: apiKey.secret };
}

/** A fresh address for each test, so per-e-mail limits never carry over. */
export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(6).toString('hex')}@example.com`;
}

/** The token of the newest magic link e-mailed to `to`, polled from the dev mailbox (mail leaves after the response). */
export function tokenFromDevMailbox(server: TestServer, to: string): Promise<string> {
  return eventually(
    async () => {
      const res = await server.http.get('/dev/mailbox.json');
      const mail = (res.body.messages as { to: string; text: string }[]).find((m) => m.to === to);
      return mail ? new URL(/https?:\/\/\S+/.exec(mail.text)![0]).searchParams.get('token')! : undefined;
    },
    { what: `a magic link e-mailed to ${to}`, timeoutMs: 5000 },
  );
}
