import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { RateLimitedError, UnauthorizedError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Principal } from '../../core/principal.js';
import { hashSecret, randomSecret } from '../../core/tokens.js';
import { parseInput } from '../../core/validation.js';
import type { Logger } from '../../infra/logger.js';
import type { AppsService } from '../apps/apps.service.js';
import { isAllowedCallbackUrl, parseStoredCallbackPatterns } from '../apps/callback-url.js';
import { Customer } from '../customers/customer.entity.js';
import type { CustomersService } from '../customers/customers.service.js';
import { type Mailer, sendInBackground } from '../email/mailer.js';
import type { Entitlements, EntitlementsService } from '../entitlements/entitlements.service.js';
import { INVITATION_TOKEN_PREFIX, type InvitationsService } from '../organizations/invitations.service.js';
import { openMagicLinkSchema, requestMagicLinkSchema, verifyMagicLinkSchema } from './auth.schemas.js';
import { magicLinkEmail } from './magic-link-email.js';
import { MagicLinkToken } from './magic-link-token.entity.js';
import type { SessionsService } from './sessions.service.js';
import { verificationLink } from './verification-link.js';

/** Recognisable in a leaked URL or a secret scanner; the 256 random bits follow. */
export const MAGIC_LINK_TOKEN_PREFIX = 'tg_ml_';

/** At most LIMIT links per e-mail address (per app) in any WINDOW. */
export const MAGIC_LINK_LIMIT = 5;
export const MAGIC_LINK_WINDOW_MS = 15 * 60 * 1000;

const INVALID_TOKEN = 'Invalid, used or expired magic link token';

export interface VerifiedLogin {
  readonly sessionToken: string;
  readonly customer: Customer;
  readonly entitlements: Entitlements;
  /** The entitlement version of the customer's context (`Tollgate-Entitlements-Version`). */
  readonly entitlementsVersion?: number;
}

export interface MagicLinksDeps {
  readonly orm: MikroORM;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly mailer: Mailer;
  /** Links in e-mails are built from this alone, never from request headers. */
  readonly publicBaseUrl: string;
  readonly apps: AppsService;
  readonly customers: CustomersService;
  readonly sessions: SessionsService;
  readonly entitlements: EntitlementsService;
  /** Invitation tokens (`tg_inv_…`) are verified here too: accepting one is signing in. */
  readonly invitations: InvitationsService;
}

/**
 * Passwordless login: e-mailing single-use links, opening them (redirect to the app's callback), and
 * exchanging a token for a customer session. The endpoints are public: the app id in the path names
 * the app, and whoever holds the e-mailed token is the customer.
 */
export class MagicLinksService {
  constructor(private readonly deps: MagicLinksDeps) {}

  private get em() {
    return this.deps.orm.em;
  }

  /**
   * Sends a login link to `email` that leads to `redirectUrl`. Answers the same way whether or not the
   * address belongs to a customer; with `autoCreateCustomer` an unknown address becomes one. The mail
   * goes out after the commit and off the request path, so response time does not reveal whether a
   * message was sent.
   */
  async requestMagicLink(_principal: Principal, appId: string, input: unknown): Promise<void> {
    const app = await this.deps.apps.appOrFail(appId);
    const { email, redirectUrl } = parseInput(requestMagicLinkSchema, input);
    if (!isAllowedCallbackUrl(redirectUrl, parseStoredCallbackPatterns(app.allowedCallbackUrls))) {
      throw ValidationError.forField('redirectUrl', 'does not match any allowed callback URL of this app');
    }
    const emailLower = email.toLowerCase();
    const now = this.deps.clock.now();
    const windowStart = new Date(now.getTime() - MAGIC_LINK_WINDOW_MS);

    const outgoing = await this.em.transactional(async (em) => {
      // Serialises requests for one address, so the count below cannot be raced past the limit.
      await em.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [
        `magic-link:${app.id}:${emailLower}`,
      ]);
      await em.execute(
        'delete from magic_link_request where app_id = ? and email_lower = ? and created_at <= ?',
        [app.id, emailLower, windowStart],
      );
      const [recent] = await em.execute<{ count: number; oldest: Date | null }[]>(
        'select count(*)::int as count, min(created_at) as oldest from magic_link_request where app_id = ? and email_lower = ?',
        [app.id, emailLower],
      );
      if (recent && recent.count >= MAGIC_LINK_LIMIT) {
        const reopensAt = new Date(recent.oldest!).getTime() + MAGIC_LINK_WINDOW_MS;
        throw new RateLimitedError(
          'Too many magic links requested for this e-mail address, try again later',
          Math.max(1, Math.ceil((reopensAt - now.getTime()) / 1000)),
        );
      }
      await em.execute('insert into magic_link_request (app_id, email_lower, created_at) values (?, ?, ?)', [
        app.id,
        emailLower,
        now,
      ]);

      const customer = app.autoCreateCustomer
        ? await this.deps.customers.findOrCreateByEmail(em, app.id, email)
        : await em.findOne(Customer, { app: app.id, emailLower });
      if (!customer) return undefined;
      const token = randomSecret(MAGIC_LINK_TOKEN_PREFIX);
      em.create(MagicLinkToken, {
        id: newId('mlt'),
        app,
        customer,
        emailLower,
        tokenHash: hashSecret(token),
        redirectUrl,
        createdAt: now,
        expiresAt: new Date(now.getTime() + app.magicLinkExpiryMinutes * 60_000),
      });
      return { to: customer.email, token };
    });

    if (outgoing) {
      const message = magicLinkEmail({
        to: outgoing.to,
        appName: app.name,
        link: verificationLink(this.deps.publicBaseUrl, app, outgoing.token),
        expiryMinutes: app.magicLinkExpiryMinutes,
      });
      sendInBackground(this.deps.mailer, this.deps.logger, message, {
        appId: app.id,
        what: 'magic-link e-mail could not be sent',
      });
    }
  }

  /**
   * The e-mailed link (`GET …/auth/verify?token=…&redirect=true`): checks the token without consuming
   * it — mail scanners open links too — and returns the callback URL with `token` added.
   */
  async openMagicLink(_principal: Principal, appId: string, query: unknown): Promise<string> {
    const app = await this.deps.apps.appOrFail(appId);
    const { token } = parseInput(openMagicLinkSchema, query);
    const redirectUrl = token.startsWith(INVITATION_TOKEN_PREFIX)
      ? await this.deps.invitations.invitationRedirectUrl(app.id, token)
      : await this.#loginRedirectUrl(app.id, token);
    // Patterns may have been narrowed since the link was sent: the current list decides.
    if (!isAllowedCallbackUrl(redirectUrl, parseStoredCallbackPatterns(app.allowedCallbackUrls))) {
      throw new ValidationError('The redirect URL of this link is no longer allowed by the app');
    }
    const target = new URL(redirectUrl);
    target.searchParams.set('token', token);
    return target.toString();
  }

  async #loginRedirectUrl(appId: string, token: string): Promise<string> {
    const link = await this.em.findOne(MagicLinkToken, {
      tokenHash: hashSecret(token),
      app: appId,
      consumedAt: null,
      expiresAt: { $gt: this.deps.clock.now() },
    });
    if (!link) throw new UnauthorizedError(INVALID_TOKEN);
    return link.redirectUrl;
  }

  /**
   * Exchanges a token for a session. Consumption is one conditional UPDATE, so of two racing requests
   * exactly one succeeds; a bad, used or expired token is refused. An invitation's token also makes the
   * invitee a member, and its session starts in the organization's context.
   */
  async verifyMagicLink(_principal: Principal, appId: string, input: unknown): Promise<VerifiedLogin> {
    const app = await this.deps.apps.appOrFail(appId);
    const { token } = parseInput(verifyMagicLinkSchema, input);
    if (token.startsWith(INVITATION_TOKEN_PREFIX)) return this.#acceptInvitation(app.id, token);
    const now = this.deps.clock.now();
    return this.em.transactional(async (em) => {
      const [consumed] = await em.execute<{ customer_id: string }[]>(
        `update magic_link_token set consumed_at = ?
          where token_hash = ? and app_id = ? and consumed_at is null and expires_at > ?
          returning customer_id`,
        [now, hashSecret(token), app.id, now],
      );
      if (!consumed) throw new UnauthorizedError(INVALID_TOKEN);
      const customer = await em.findOneOrFail(Customer, { id: consumed.customer_id, app: app.id });
      const { token: sessionToken } = await this.deps.sessions.issue({
        appId: app.id,
        customerId: customer.id,
      });
      const state = await this.deps.entitlements.resolveState({ appId: app.id, customerId: customer.id });
      return {
        sessionToken,
        customer,
        entitlements: state.entitlements,
        entitlementsVersion: state.version,
      };
    });
  }

  async #acceptInvitation(appId: string, token: string): Promise<VerifiedLogin> {
    return this.em.transactional(async (em) => {
      const { customer, organizationId } = await this.deps.invitations.acceptInvitation(em, appId, token);
      const { token: sessionToken } = await this.deps.sessions.issue({
        appId,
        customerId: customer.id,
        organizationId,
      });
      const state = await this.deps.entitlements.resolveState({ appId, organizationId });
      return {
        sessionToken,
        customer,
        entitlements: state.entitlements,
        entitlementsVersion: state.version,
      };
    });
  }
}
