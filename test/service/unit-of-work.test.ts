import { jest } from '@jest/globals';
import { ValidationError } from '@mikro-orm/core';
import { connect, type Orm } from '../../src/db.js';
import { inTransaction, withUnitOfWork } from '../../src/infra/unit-of-work.js';
import { App } from '../../src/modules/apps/app.entity.js';

/**
 * Each request's unit of work is an EntityManager fork made when first asked for (src/infra/unit-of-work.ts),
 * on the test database: one per scope, none for a scope that never asks, and a transaction seen as one.
 */

let orm: Orm;

beforeAll(async () => {
  orm = await connect(process.env.TEST_DATABASE_URL!);
});
afterAll(async () => {
  await orm.close();
});
afterEach(() => {
  jest.restoreAllMocks();
});

describe('the unit of work of a scope', () => {
  it('is forked on first use only, once, and is the same for everything in the scope', async () => {
    const fork = jest.spyOn(orm.em, 'fork');
    const [first, second] = await withUnitOfWork(orm.em, async () => {
      // Asking whether the scope is in a transaction does not fork one.
      expect(inTransaction(orm.em)).toBe(false);
      expect(fork).not.toHaveBeenCalled();
      const ems = await Promise.all([
        Promise.resolve().then(() => orm.em.getContext()),
        Promise.resolve().then(() => orm.em.getContext()),
      ]);
      expect(fork).toHaveBeenCalledTimes(1);
      return ems;
    });
    expect(first).toBe(second);
    expect(first).not.toBe(orm.em);
    expect(fork).toHaveBeenCalledTimes(1);
    // A scope that never asks makes none.
    await withUnitOfWork(orm.em, async () => undefined);
    expect(fork).toHaveBeenCalledTimes(1);
  });

  it('keeps what one scope loaded out of another', async () => {
    const [a, b] = await Promise.all([
      withUnitOfWork(orm.em, async () => {
        const em = orm.em.getContext();
        em.getReference(App, 'app_unit_of_work_test');
        return em;
      }),
      withUnitOfWork(orm.em, async () => orm.em.getContext()),
    ]);
    expect(a).not.toBe(b);
    expect(a.getUnitOfWork().getIdentityMap().values()).toHaveLength(1);
    expect(b.getUnitOfWork().getIdentityMap().values()).toHaveLength(0);
  });

  it('sees its transaction, and refuses the global context outside any scope', async () => {
    await withUnitOfWork(orm.em, async () => {
      expect(inTransaction(orm.em)).toBe(false);
      await orm.em.transactional(async () => {
        expect(inTransaction(orm.em)).toBe(true);
      });
      expect(inTransaction(orm.em)).toBe(false);
      // Once forked, the question goes to the fork.
      orm.em.getContext();
      expect(inTransaction(orm.em)).toBe(false);
      await orm.em.transactional(async () => {
        expect(inTransaction(orm.em)).toBe(true);
      });
    });
    expect(inTransaction(orm.em)).toBe(false);
    await expect(orm.em.find(App, {}, { limit: 1 })).rejects.toThrow(ValidationError);
  });
});
