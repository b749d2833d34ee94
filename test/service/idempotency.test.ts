import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../src/core/clock.js';
import { ConflictError } from '../../src/core/errors.js';
import {
  ERASED_SUBJECT_MESSAGE,
  IdempotencyService,
} from '../../src/modules/idempotency/idempotency.service.js';
import { eventually } from '../helpers/eventually.js';
import { expectDomainError, type ServiceCore, startServices } from '../helpers/services.js';

let core: ServiceCore;
let appId: string;

beforeAll(async () => {
  core = await startServices();
  ({ appId } = await core.createApp());
});

afterAll(async () => {
  await core?.close();
});

const scope = () => ({ appId, credentialId: `key_${randomUUID()}` });
/** Ends a run the test took (its lease renewal stops), so nothing runs on after the test. */
async function finished(claim: Awaited<ReturnType<IdempotencyService['claim']>>): Promise<void> {
  if (claim.kind === 'run') await claim.finish(null);
}

const answer = { status: 201, contentType: 'application/json; charset=utf-8', body: '{"id":"cus_1"}' };

describe('IdempotencyService', () => {
  it('answers 409 "still in progress" when the first run outlasts the wait, and replays once it is done', async () => {
    const service = new IdempotencyService(core.deps.orm, core.deps.clock, { waitMs: 200, pollMs: 20 });
    const who = scope();
    const first = await service.claim(who, 'k', 'f1');
    expect(first.kind).toBe('run');
    await expectDomainError(
      service.claim(who, 'k', 'f1'),
      ConflictError,
      'A request with this Idempotency-Key is still in progress; retry once it has been answered',
    );
    if (first.kind !== 'run') throw new Error('unreachable');
    await first.finish(answer);
    expect(await service.claim(who, 'k', 'f1')).toEqual({ kind: 'replay', response: answer });
  });

  it('lets a waiting repeat replay the answer as soon as the first run stores it', async () => {
    const service = new IdempotencyService(core.deps.orm, core.deps.clock, { waitMs: 5000, pollMs: 10 });
    const who = scope();
    const first = await service.claim(who, 'k', 'f');
    const waiting = service.claim(who, 'k', 'f');
    if (first.kind !== 'run') throw new Error('expected to run');
    await first.finish(answer);
    expect(await waiting).toEqual({ kind: 'replay', response: answer });
  });

  it('keeps a slow first run its own by renewing the lease: a late repeat waits instead of running too', async () => {
    const clock = new ManualClock(new Date());
    const service = new IdempotencyService(core.deps.orm, clock, { leaseMs: 60, waitMs: 100, pollMs: 10 });
    const who = scope();
    const first = await service.claim(who, 'slow', 'f');
    if (first.kind !== 'run') throw new Error('expected to run');
    // Far past the first lease; the running request renews it from the moved clock.
    clock.advance(60_000);
    await eventually(
      async () => {
        const [row] = await core.run(() =>
          core.deps.orm.em.execute<{ locked_until: string }[]>(
            'select locked_until from idempotency_record where credential_id = ?',
            [who.credentialId],
          ),
        );
        return new Date(row!.locked_until).getTime() > clock.now().getTime() ? true : undefined;
      },
      { what: 'the lease to be renewed' },
    );
    await expectDomainError(service.claim(who, 'slow', 'f'), ConflictError, /still in progress/);
    await first.finish(answer);
    expect(await service.claim(who, 'slow', 'f')).toEqual({ kind: 'replay', response: answer });
  });

  it('gives the key back when the answer is not kept (5xx), so the next request runs', async () => {
    const service = new IdempotencyService(core.deps.orm, core.deps.clock);
    const who = scope();
    const first = await service.claim(who, 'k', 'f');
    if (first.kind !== 'run') throw new Error('expected to run');
    await first.finish(null);
    const second = await service.claim(who, 'k', 'f');
    expect(second.kind).toBe('run');
    await finished(second);
  });

  it('forgets a record after 24 hours: the key then takes any request, and the purge deletes it', async () => {
    const clock = new ManualClock(new Date());
    const service = new IdempotencyService(core.deps.orm, clock);
    const who = scope();
    const first = await service.claim(who, 'k', 'f1');
    if (first.kind !== 'run') throw new Error('expected to run');
    await first.finish(answer);
    await expectDomainError(service.claim(who, 'k', 'f2'), ConflictError, /different request/);
    clock.advance(24 * 60 * 60 * 1000 + 1);
    const count = () =>
      core.run(() =>
        core.deps.orm.em.execute<{ n: string }[]>(
          'select count(*) as n from idempotency_record where credential_id = ?',
          [who.credentialId],
        ),
      );
    expect(await count()).toEqual([{ n: '1' }]);
    // Expired by this instance's clock but not by the database's: the purge keeps it (a clock running
    // ahead, like this one, deletes nothing the other instances still replay).
    await service.purgeExpired();
    expect(await count()).toEqual([{ n: '1' }]);
    await core.run(() =>
      core.deps.orm.em.execute(
        `update idempotency_record set expires_at = now() - interval '1 second' where credential_id = ?`,
        [who.credentialId],
      ),
    );
    expect(await service.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await count()).toEqual([{ n: '0' }]);
    // Expired but not yet purged: taken over as new.
    const again = await service.claim(who, 'k2', 'f1');
    if (again.kind !== 'run') throw new Error('expected to run');
    await again.finish(answer);
    clock.advance(24 * 60 * 60 * 1000 + 1);
    const taken = await service.claim(who, 'k2', 'other');
    expect(taken.kind).toBe('run');
    await finished(taken);
  });

  describe('a customer erasure', () => {
    const erase = (service: IdempotencyService, customerId: string, sessionIds: string[] = []) =>
      core.run(() =>
        core.deps.orm.em.transactional((em) => service.eraseCustomer(em, { appId, customerId, sessionIds })),
      );
    const rows = (credentialId: string) =>
      core.run(() =>
        core.deps.orm.em.execute<Record<string, unknown>[]>(
          `select key, fingerprint, owner_token, response_body, customer_ids, erased_at is not null as erased
             from idempotency_record where credential_id = ? order by key`,
          [credentialId],
        ),
      );
    const customer = () => `cus_${randomUUID().replaceAll('-', '')}`;

    it('turns the records that touched the customer into 409 tombstones until they expire, and no other', async () => {
      const clock = new ManualClock(new Date());
      const service = new IdempotencyService(core.deps.orm, clock);
      const who = scope();
      const erased = customer();
      const other = customer();
      const touched = await service.claim(who, 'ada@example.com', 'f');
      if (touched.kind !== 'run') throw new Error('expected to run');
      // Its answer names no id: the customer is known from what the request touched.
      await touched.finish({ ...answer, body: '{"metadata":{"x":1}}' }, [erased]);
      const bystander = await service.claim(who, 'bystander', 'f');
      if (bystander.kind !== 'run') throw new Error('expected to run');
      await bystander.finish(answer, [other]);

      await erase(service, erased);

      const [kept, tombstone] = await rows(who.credentialId); // by key: "bystander" < "erased:…"
      expect(tombstone).toEqual({
        key: expect.stringMatching(/^erased:[0-9a-f]{64}$/),
        fingerprint: '',
        owner_token: null,
        response_body: null,
        customer_ids: [],
        erased: true,
      });
      expect(kept).toMatchObject({ key: 'bystander', response_body: answer.body, erased: false });
      // Whatever request the key comes with: neither replayed nor run.
      for (const fingerprint of ['f', 'another']) {
        await expectDomainError(
          service.claim(who, 'ada@example.com', fingerprint),
          ConflictError,
          ERASED_SUBJECT_MESSAGE,
        );
      }
      expect(await service.claim(who, 'bystander', 'f')).toEqual({ kind: 'replay', response: answer });
      // Expired: the key is free again, and a second erasure of it replaces the expired tombstone.
      clock.advance(24 * 60 * 60 * 1000 + 1);
      const later = await service.claim(who, 'ada@example.com', 'f');
      if (later.kind !== 'run') throw new Error('expected to run');
      await later.finish(answer, [erased]);
      await erase(service, erased);
      await expectDomainError(
        service.claim(who, 'ada@example.com', 'f'),
        ConflictError,
        ERASED_SUBJECT_MESSAGE,
      );
      expect(await rows(who.credentialId)).toHaveLength(2);
    });

    it("never stores the answer of a run on the customer racing with the erasure, but lets the erasing request's own finish", async () => {
      const service = new IdempotencyService(core.deps.orm, core.deps.clock);
      const who = scope();
      const erased = customer();
      const racing = await service.claim(who, 'racing', 'f', [erased]);
      const own = await service.claim(who, 'own', 'f', [erased]);
      if (racing.kind !== 'run' || own.kind !== 'run') throw new Error('expected to run');
      await service.runAsRecord(who, 'own', () => erase(service, erased));
      await racing.finish({ ...answer, body: '{"email":"ada@example.com"}' }, [erased]);
      await own.finish({ ...answer, body: `{"id":"${erased}","deleted":true}` }, [erased]);

      expect(await rows(who.credentialId)).toEqual([
        expect.objectContaining({
          key: expect.stringMatching(/^erased:/),
          response_body: null,
          erased: true,
        }),
        expect.objectContaining({
          key: 'own',
          response_body: `{"id":"${erased}","deleted":true}`,
          erased: false,
        }),
      ]);
      await expectDomainError(service.claim(who, 'racing', 'f'), ConflictError, ERASED_SUBJECT_MESSAGE);
      expect((await service.claim(who, 'own', 'f')).kind).toBe('replay');
    });

    it("tombstones what was kept under the customer's sessions", async () => {
      const service = new IdempotencyService(core.deps.orm, core.deps.clock);
      const session = { appId, credentialId: `ses_${randomUUID()}` };
      const first = await service.claim(session, 'k', 'f');
      if (first.kind !== 'run') throw new Error('expected to run');
      await first.finish(answer);
      await erase(service, customer(), [session.credentialId]);
      await expectDomainError(service.claim(session, 'k', 'f'), ConflictError, ERASED_SUBJECT_MESSAGE);
    });
  });
});
