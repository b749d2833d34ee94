import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../config.js';
import type { Clock } from '../../core/clock.js';
import { RateLimitedError, UnauthorizedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { OperatorIdentity, OperatorRole } from '../../core/principal.js';
import { hashSecret, randomSecret, secretsEqual } from '../../core/tokens.js';
import { parseInput } from '../../core/validation.js';
import type { Logger } from '../../infra/logger.js';
import { actionEmail } from '../email/action-email.js';
import { type Mailer, sendInBackground } from '../email/mailer.js';
import type { RateLimitRule, RateLimitStore } from '../rate-limits/rate-limit-store.js';
import { Operator, OperatorSession, OperatorSignInToken } from './operator.entity.js';
import { operatorSignInSchema, operatorTokenSchema } from './operators.schemas.js';

/** Recognisable in a leaked URL or a secret scanner; 256 random bits follow. */
export const OPERATOR_LINK_PREFIX = 'tg_ol_';
export const OPERATOR_SESSION_PREFIX = 'tg_os_';

/** How long an e-mailed sign-in link stays usable. */
export const OPERATOR_LINK_MINUTES = 15;

/** Sign-in attempts: per address (whether or not it is an operator's) and per client IP. */
export const SIGN_IN_PER_ADDRESS: RateLimitRule = {
  name: 'operator-sign-in-address',
  points: 5,
  windowSeconds: 900,
};
export const SIGN_IN_PER_IP: RateLimitRule = { name: 'operator-sign-in-ip', points: 30, windowSeconds: 900 };

/** How stale a session's `lastSeenAt` may be: it is written at most once a minute per session. */
const LAST_SEEN_GRANULARITY_MS = 60_000;

const INVALID_LINK = 'Invalid, used or expired sign-in link';

export interface SignedIn {
  /** The cookie's value: given out once, only its hash is stored. */
  readonly sessionToken: string;
  readonly operator: OperatorIdentity;
  readonly csrfToken: string;
}

export interface ClientInfo {
  readonly ip: string | null;
  readonly userAgent: string | null;
}

interface SessionRow {
  readonly id: string;
  readonly operator_id: string;
  readonly email: string;
  readonly role: OperatorRole;
  readonly last_seen_at: Date;
  readonly expires_at: Date;
}

/**
 * The operator realm of Tollgate's login machinery: e-mailed single-use links, exchanged for a session
 * carried by an httpOnly cookie. Separate from every app's customers (own tables, own token prefixes).
 * Sessions end after OPERATOR_SESSION_IDLE_HOURS without use or OPERATOR_SESSION_MAX_DAYS in all, when
 * revoked, and when their operator is removed (the row goes with it), each checked on every request.
 */
export class OperatorSignInService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly mailer: Mailer,
    private readonly limits: RateLimitStore,
    private readonly config: Pick<Config, 'publicBaseUrl' | 'operators'>,
  ) {}

  /**
   * E-mails a sign-in link when `email` is an operator's; answers the same either way, and does the work
   * off the request path so the time taken says nothing either. Over the per-address or per-IP budget
   * → 429 (counted for every address alike).
   */
  async requestSignIn(input: unknown, ip: string): Promise<void> {
    const { email } = parseInput(operatorSignInSchema, input);
    const emailLower = email.toLowerCase();
    for (const [rule, key] of [
      [SIGN_IN_PER_IP, `ip:${ip}`],
      [SIGN_IN_PER_ADDRESS, `email:${hashSecret(emailLower)}`],
    ] as const) {
      const outcome = await this.limits.consume(rule, key);
      if (!outcome.allowed) {
        throw new RateLimitedError(
          'Too many sign-in attempts, try again later',
          Math.max(1, Math.ceil(outcome.msBeforeReset / 1000)),
        );
      }
    }
    // Looked up, written and sent off the request path: the answer and its timing are the same for
    // every address.
    this.sendLink(emailLower).catch((error: unknown) => {
      this.logger.error(
        { err: { message: error instanceof Error ? error.message : String(error) } },
        'operator sign-in link could not be issued',
      );
    });
  }

  private async sendLink(emailLower: string): Promise<void> {
    const em = this.orm.em.fork();
    const operator = await em.findOne(Operator, { emailLower });
    if (!operator) return;
    const token = randomSecret(OPERATOR_LINK_PREFIX);
    const now = this.clock.now();
    await em.transactional(async (tx) => {
      tx.create(OperatorSignInToken, {
        id: newId('opt'),
        operator: operator.id,
        tokenHash: hashSecret(token),
        createdAt: now,
        expiresAt: new Date(now.getTime() + OPERATOR_LINK_MINUTES * 60_000),
      });
    });
    // In the fragment: never sent to a server, so neither logs nor a mail scanner's visit can use it.
    const link = `${this.config.publicBaseUrl}/dashboard#sign-in=${encodeURIComponent(token)}`;
    const message = actionEmail({
      to: operator.email,
      subject: 'Sign in to the Tollgate dashboard',
      heading: 'Sign in to the Tollgate dashboard',
      instruction: 'Open this link to sign in:',
      buttonLabel: 'Sign in',
      link,
      notes: [
        `The link works once, for ${OPERATOR_LINK_MINUTES} minutes.`,
        'If you did not ask to sign in, you can ignore this e-mail.',
      ],
    });
    sendInBackground(this.mailer, this.logger, message, {
      appId: 'operators',
      what: 'operator sign-in e-mail could not be sent',
    });
  }

  /** Exchanges a link's token for a session; of two racing uses exactly one succeeds. */
  async completeSignIn(input: unknown, client: ClientInfo): Promise<SignedIn> {
    const { token } = parseInput(operatorTokenSchema, input);
    const now = this.clock.now();
    return this.orm.em.transactional(async (em) => {
      const [consumed] = await em.execute<{ operator_id: string }[]>(
        `update operator_sign_in_token set consumed_at = ?
          where token_hash = ? and consumed_at is null and expires_at > ?
          returning operator_id`,
        [now, hashSecret(token), now],
      );
      if (!consumed) throw new UnauthorizedError(INVALID_LINK);
      const operator = await em.findOneOrFail(Operator, { id: consumed.operator_id });
      const sessionToken = randomSecret(OPERATOR_SESSION_PREFIX);
      const session = em.create(OperatorSession, {
        id: newId('ops'),
        operator,
        tokenHash: hashSecret(sessionToken),
        createdAt: now,
        lastSeenAt: now,
        expiresAt: new Date(now.getTime() + this.config.operators.sessionMaxDays * 86_400_000),
        ip: client.ip,
        userAgent: client.userAgent?.slice(0, 512) ?? null,
      });
      return {
        sessionToken,
        csrfToken: csrfTokenOf(sessionToken),
        operator: { id: operator.id, email: operator.email, role: operator.role, sessionId: session.id },
      };
    });
  }

  /** The operator a cookie's token signs in, or undefined when it is unknown, revoked, idle or expired. */
  async resolveSession(token: string): Promise<OperatorIdentity | undefined> {
    if (!token.startsWith(OPERATOR_SESSION_PREFIX) || token.length > 512) return undefined;
    const connection = this.orm.em.getConnection();
    const [row] = await connection.execute<SessionRow[]>(
      `select s.id, s.operator_id, o.email, o.role, s.last_seen_at, s.expires_at
         from operator_session s join operator o on o.id = s.operator_id
        where s.token_hash = ? and s.revoked_at is null`,
      [hashSecret(token)],
    );
    if (!row) return undefined;
    const now = this.clock.now().getTime();
    const idleUntil =
      new Date(row.last_seen_at).getTime() + this.config.operators.sessionIdleHours * 3_600_000;
    if (new Date(row.expires_at).getTime() <= now || idleUntil <= now) return undefined;
    if (now - new Date(row.last_seen_at).getTime() >= LAST_SEEN_GRANULARITY_MS) {
      await connection.execute('update operator_session set last_seen_at = ? where id = ?', [
        new Date(now),
        row.id,
      ]);
    }
    return { id: row.operator_id, email: row.email, role: row.role, sessionId: row.id };
  }

  /** Ends the session of this cookie token (signing out); an unknown token changes nothing. */
  async signOut(token: string): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('update operator_session set revoked_at = ? where token_hash = ? and revoked_at is null', [
        this.clock.now(),
        hashSecret(token),
      ]);
  }
}

/**
 * The anti-forgery token of a session: derived from the session's secret, so it needs no storage and
 * only a page that was given it (same origin: the cookie alone never reveals it) can send it back.
 */
export function csrfTokenOf(sessionToken: string): string {
  return hashSecret(`tollgate-csrf:${sessionToken}`);
}

export function csrfTokenMatches(sessionToken: string, sent: string): boolean {
  return secretsEqual(csrfTokenOf(sessionToken), sent);
}
