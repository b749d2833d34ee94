import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type OperatorRole, type Principal, requireOperatorManager } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { Operator, OperatorSession } from './operator.entity.js';
import { addOperatorSchema, changeOperatorRoleSchema, operatorIdSchema } from './operators.schemas.js';

/** An operator session as the Operators page lists it (never its token). */
export interface OperatorSessionView {
  readonly id: string;
  readonly operatorId: string;
  readonly createdAt: Date;
  readonly lastSeenAt: Date;
  readonly expiresAt: Date;
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** Whether it is the caller's own session. */
  readonly current: boolean;
}

/**
 * The people who run this Tollgate: added, re-roled and removed by an owner (or the admin token, the
 * server's own authority, which the CLI uses). There is always at least one owner once there is one:
 * removing or demoting the last is refused (409), decided under a lock on every owner's row.
 */
export class OperatorsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
  ) {}

  /** Every operator, oldest first: owners (and the admin token) only, as the Operators page is theirs. */
  async listOperators(principal: Principal): Promise<Operator[]> {
    requireOperatorManager(principal);
    return this.orm.em.find(Operator, {}, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /** Adds an operator; an address already present → 409. */
  async addOperator(principal: Principal, input: unknown): Promise<Operator> {
    requireOperatorManager(principal);
    const { email, role } = parseInput(addOperatorSchema, input);
    const emailLower = email.toLowerCase();
    return this.orm.em.transactional(async (em) => {
      if (await em.findOne(Operator, { emailLower })) {
        throw new ConflictError('An operator with this e-mail address already exists');
      }
      const now = this.clock.now();
      return em.create(Operator, {
        id: newId('op'),
        email,
        emailLower,
        role,
        createdAt: now,
        updatedAt: now,
      });
    });
  }

  /** Changes an operator's role; demoting the last owner → 409. */
  async changeOperatorRole(principal: Principal, input: unknown): Promise<Operator> {
    requireOperatorManager(principal);
    const { id, role } = parseInput(changeOperatorRoleSchema, input);
    return this.orm.em.transactional(async (em) => {
      const operator = await this.lockedOrFail(em, id);
      if (operator.role === 'owner' && role !== 'owner') await this.assertAnotherOwner(em, id);
      if (operator.role !== role) {
        operator.role = role;
        operator.updatedAt = this.clock.now();
      }
      return operator;
    });
  }

  /** Removes an operator, whose sessions end with it (at once); the last owner → 409. */
  async removeOperator(principal: Principal, rawId: unknown): Promise<{ id: string }> {
    requireOperatorManager(principal);
    const id = parseInput(operatorIdSchema, rawId);
    return this.orm.em.transactional(async (em) => {
      const operator = await this.lockedOrFail(em, id);
      if (operator.role === 'owner') await this.assertAnotherOwner(em, id);
      em.remove(operator);
      return { id };
    });
  }

  /** The live sessions of every operator, newest first (owners revoke them from the Operators page). */
  async listSessions(principal: Principal): Promise<OperatorSessionView[]> {
    requireOperatorManager(principal);
    const now = this.clock.now();
    const sessions = await this.orm.em.find(
      OperatorSession,
      { revokedAt: null, expiresAt: { $gt: now } },
      { orderBy: { createdAt: 'desc', id: 'asc' } },
    );
    return sessions.map((s) => ({
      id: s.id,
      operatorId: s.operator.id,
      createdAt: s.createdAt,
      lastSeenAt: s.lastSeenAt,
      expiresAt: s.expiresAt,
      ip: s.ip,
      userAgent: s.userAgent,
      current: principal.kind === 'admin' && principal.operator?.sessionId === s.id,
    }));
  }

  /** Ends one operator session at once. */
  async revokeSession(principal: Principal, rawId: unknown): Promise<{ id: string }> {
    requireOperatorManager(principal);
    const id = parseInput(operatorIdSchema, rawId);
    return this.orm.em.transactional(async (em) => {
      const session = await em.findOne(OperatorSession, { id, revokedAt: null });
      if (!session) throw new NotFoundError('OperatorSession', id);
      session.revokedAt = this.clock.now();
      return { id };
    });
  }

  /** Whether any operator exists (a development start creates the first owner when none does). */
  async anyOperator(): Promise<boolean> {
    return (await this.orm.em.count(Operator, {})) > 0;
  }

  private async lockedOrFail(em: EntityManager, id: string): Promise<Operator> {
    // Every owner row first, always in the same order, so two concurrent demotions cannot both see the
    // other as the remaining owner.
    await em.find(
      Operator,
      { role: 'owner' satisfies OperatorRole },
      { lockMode: LockMode.PESSIMISTIC_WRITE, orderBy: { id: 'asc' } },
    );
    const operator = await em.findOne(
      Operator,
      { id },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (!operator) throw new NotFoundError('Operator', id);
    return operator;
  }

  private async assertAnotherOwner(em: EntityManager, id: string): Promise<void> {
    const others = await em.count(Operator, { role: 'owner', id: { $ne: id } });
    if (others === 0) throw new ConflictError('The last owner cannot be removed or demoted');
  }
}
