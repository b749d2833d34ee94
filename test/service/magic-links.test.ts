import { ManualClock } from '../../src/core/clock.js';
import {
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
} from '../../src/core/errors.js';
import { ANONYMOUS } from '../../src/core/principal.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { expectDomainError, type ServiceCore, startServices } from '../helpers/services.js';

/** MagicLinksService called directly, on the test database, reading what it e-mails from the dev mailbox. */

const CALLBACK = 'https://app.example.com/callback';
const INVALID_TOKEN = 'Invalid, used or expired magic link token';

const clock = new ManualClock(new Date('2026-05-01T09:00:00.000Z'));
let core: ServiceCore;
let appId: string;

beforeAll(async () => {
  core = await startServices({ clock });
  ({ appId } = await core.createApp({ name: 'Shop', allowedCallbackUrls: 'https://app.example.com/*' }));
});
afterAll(async () => {
  await core.close();
});

let sequence = 0;
const uniqueEmail = () => `login.${++sequence}.${Date.now()}@example.com`;

const request = (email: string, app = appId, redirectUrl = CALLBACK) =>
  core.run(() => core.services.magicLinks.requestMagicLink(ANONYMOUS, app, { email, redirectUrl }));
const verify = (token: string, app = appId) =>
  core.run(() => core.services.magicLinks.verifyMagicLink(ANONYMOUS, app, { token }));
const open = (token: string) =>
  core.run(() => core.services.magicLinks.openMagicLink(ANONYMOUS, appId, { token, redirect: 'true' }));

/** The newest e-mail to `to` (mail leaves after the use case returns). */
const mailTo = (to: string) =>
  eventually(() => core.mailbox.list().find((m) => m.to === to), { what: `an e-mail to ${to}` });
const linkIn = (text: string) => new URL(/https?:\/\/\S+/.exec(text)![0]);

describe('MagicLinksService', () => {
  it('e-mails a link whose token opens without being used, then verifies exactly once', async () => {
    const email = uniqueEmail();
    await request(email);
    const mail = await mailTo(email);
    expect(mail.subject).toBe('Sign in to Shop');
    const link = linkIn(mail.text);
    expect(`${link.origin}${link.pathname}`).toBe(
      `${core.deps.config.publicBaseUrl}/v1/apps/${appId}/auth/verify`,
    );
    expect(link.searchParams.get('redirect')).toBe('true');
    const token = link.searchParams.get('token')!;
    expect(token).toMatch(/^tg_ml_/);

    // Opening the link (as a mail scanner would, twice) leads to the callback without using the token.
    const target = `${CALLBACK}?token=${encodeURIComponent(token)}`;
    expect(await open(token)).toBe(target);
    expect(await open(token)).toBe(target);

    const login = await verify(token);
    expect(login.customer.email).toBe(email);
    expect(login.entitlements).toEqual({ planName: null, features: {} });
    expect(await core.principalOf(login.sessionToken)).toMatchObject({
      kind: 'session',
      appId,
      customerId: login.customer.id,
    });

    await expectDomainError(verify(token), UnauthorizedError, INVALID_TOKEN);
    await expectDomainError(open(token), UnauthorizedError, INVALID_TOKEN);
  });

  it('lets only one of two simultaneous verifications of a token succeed', async () => {
    const email = uniqueEmail();
    await request(email);
    const token = linkIn((await mailTo(email)).text).searchParams.get('token')!;
    const outcomes = await Promise.allSettled([verify(token), verify(token)]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(UnauthorizedError);
  });

  it('refuses a token once it has expired, and a token of another app', async () => {
    const email = uniqueEmail();
    await request(email);
    const token = linkIn((await mailTo(email)).text).searchParams.get('token')!;
    const { appId: otherApp } = await core.createApp({ allowedCallbackUrls: 'https://app.example.com/*' });
    await expectDomainError(verify(token, otherApp), UnauthorizedError, INVALID_TOKEN);
    clock.advance(15 * 60_000);
    await expectDomainError(verify(token), UnauthorizedError, INVALID_TOKEN);
  });

  it('e-mails nothing for an unknown address when the app does not create customers', async () => {
    const { appId: closed, principal } = await core.createApp({
      autoCreateCustomer: false,
      allowedCallbackUrls: 'https://app.example.com/*',
    });
    const stranger = uniqueEmail();
    await request(stranger, closed);
    const fixtures = new Fixtures(core, closed);
    const known = uniqueEmail();
    await fixtures.customer(known);
    await request(known, closed);
    await mailTo(known);
    // The known address's mail was sent after the stranger's request: none came for the stranger.
    expect(core.mailbox.list().filter((m) => m.to === stranger)).toEqual([]);
    const page = await core.run(() => core.services.customers.listCustomers(principal, { email: stranger }));
    expect(page.total).toBe(0);
  });

  it('refuses a redirect URL the app does not allow, and an unknown app', async () => {
    const email = uniqueEmail();
    await expectDomainError(
      request(email, appId, 'https://evil.example.net/'),
      ValidationError,
      'redirectUrl: does not match any allowed callback URL of this app',
    );
    await expectDomainError(request(email, 'app_unknown'), NotFoundError, 'App app_unknown not found');
    await expectDomainError(
      core.run(() => core.services.magicLinks.requestMagicLink(ANONYMOUS, appId, { email: 'nope' })),
      ValidationError,
      /^email: must be a valid e-mail address; redirectUrl: /,
    );
  });

  it('sends at most five links per address in fifteen minutes', async () => {
    const email = uniqueEmail();
    for (let i = 0; i < 5; i++) await request(email);
    const limited = await expectDomainError(
      request(email),
      RateLimitedError,
      'Too many magic links requested for this e-mail address, try again later',
    );
    expect(limited.retryAfterSeconds).toBe(15 * 60);
    clock.advance(15 * 60_000);
    await request(email);
  });
});
