import { randomBytes, randomUUID } from 'node:crypto';
import { withContext } from '../../src/db.js';
import { eventually } from '../helpers/eventually.js';
import { wherePersonalDataRemains } from '../helpers/personal-data.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * A customer's erasure selects by subject id alone (issue 25): other customers whose e-mails and names
 * overlap the deleted one's as text keep every row, and nothing of the deleted one remains or replays.
 */

let server: TestServer;
let receiver: WebhookReceiver;

const ERASED = 'The customer this request concerned was deleted';

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  // Every bystander's delivery fails (500) and is retried each second for a while: still pending when
  // the customer is deleted, and attempted again after it.
  receiver.status = (request) => (request.path === '/bystanders' ? 500 : 200);
  server = await startTestServer({ env: { WEBHOOK_RETRY_SCHEDULE: Array(40).fill('1').join(',') } });
});

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
  return withContext(server.deps.orm, () => server.deps.orm.em.execute<T[]>(query, params));
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

const personalDataLeft = (needles: string[]) => wherePersonalDataRemains(sql, needles);

describe('erasure by subject id', () => {
  it("touches no bystander whose e-mail or name overlaps the deleted customer's as text", async () => {
    const { appId, apiKey } = await server.createApp();
    const endpoint = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: `${receiver.url}/bystanders`, events: ['customer.created', 'customer.updated'] });
    expect(endpoint.status).toBe(201);
    const m = randomBytes(4).toString('hex');
    const domain = `x${m}.example`;
    // The deleted customer: its name is a substring of every payload's "email" and "metadata" keys.
    const victim = { email: `ann@${domain}`, name: 'Ma' };
    const bystanders = [
      { email: `joann@${domain}`, name: 'Mary Ma' }, // the victim's e-mail is a suffix of this one
      { email: `ann@${domain}.org`, name: 'MA' }, // …a prefix of this one; the name in another case
      { email: `email@${domain}`, name: 'email' }, // a JSON key as e-mail and name
      { email: `ilkay.ann@${domain}`, name: 'İlkay mA' }, // Unicode whose lower case differs by language
      { email: `ANN.${m}@${domain}`, name: 'ma' },
    ];
    const create = (person: { email: string; name: string }, key: string) =>
      server.http
        .post('/v1/customers')
        .set(auth(apiKey))
        .set('idempotency-key', key)
        .send({ email: person.email, name: person.name, metadata: { ma: person.name, email: person.email } });
    const people: { email: string; name: string; key: string; id: string; answer: unknown }[] = [];
    for (const person of bystanders) {
      const key = `signup-${person.email}-${victim.email}`; // the key names the victim's address too
      const created = await create(person, key);
      expect(created.status).toBe(201);
      people.push({ ...person, key, id: created.body.id as string, answer: created.body });
    }
    // A GraphQL answer of a bystander that names the victim's address (its metadata), kept too.
    const graphqlKey = randomUUID();
    const graphqlSend = () =>
      server.http
        .post('/graphql')
        .set(auth(apiKey))
        .set('idempotency-key', graphqlKey)
        .send({
          query:
            'mutation($id: ID!) { updateCustomer(id: $id, input: { metadata: { ref: "Ma" } }) { metadata } }',
          variables: { id: people[0]!.id },
        });
    const graphqlFirst = await graphqlSend();
    expect(graphqlFirst.body.data.updateCustomer.metadata.ref).toBe('Ma');
    const victimKey = `signup-${victim.email}`;
    const victimCreated = await create(victim, victimKey);
    expect(victimCreated.status).toBe(201);
    const victimId = victimCreated.body.id as string;
    const bystanderIds = people.map((p) => p.id);

    // Every bystander's deliveries are pending, failing and retried.
    const deliveriesOf = () =>
      sql<{ id: string; attempts: number; status: string; subject: string }>(
        `select d.id, d.attempts, d.status, e.body::jsonb->'data'->>'id' as subject
           from webhook_delivery d join webhook_event e on e.id = d.event_id
          where e.app_id = ? order by d.id`,
        [appId],
      );
    const before = await eventually(
      async () => {
        const rows = (await deliveriesOf()).filter((d) => bystanderIds.includes(d.subject));
        return rows.length === bystanders.length + 1 && rows.every((d) => d.attempts >= 1) ? rows : undefined;
      },
      { what: 'a failed first attempt of every bystander delivery' },
    );
    expect(before.every((d) => d.status === 'pending')).toBe(true);
    const records = () =>
      sql<{ key: string; response_status: number | null; response_body: string | null }>(
        "select key, response_status, response_body from idempotency_record where app_id = ? and key <> ? and key not like 'erased:%' order by key",
        [appId, victimKey],
      );
    const recordsBefore = await records();
    expect(recordsBefore).toHaveLength(bystanders.length + 1);

    const res = await server.http.delete(`/v1/customers/${victimId}`).set(auth(apiKey));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: victimId, deleted: true });

    // The victim's own event and delivery are gone; every bystander's is there, still being attempted.
    const after = await deliveriesOf();
    expect(after.filter((d) => d.subject === victimId)).toEqual([]);
    expect(after.filter((d) => bystanderIds.includes(d.subject)).map((d) => d.id)).toEqual(
      before.map((d) => d.id),
    );
    const attemptedAgain = await eventually(
      async () => {
        const rows = (await deliveriesOf()).filter((d) => bystanderIds.includes(d.subject));
        const sinceBefore = rows.filter((d) => d.attempts > before.find((b) => b.id === d.id)!.attempts);
        return sinceBefore.length === before.length ? rows : undefined;
      },
      { what: 'every bystander delivery to be attempted again after the deletion' },
    );
    expect(attemptedAgain.every((d) => d.status === 'pending')).toBe(true);
    const customers = await sql<{ id: string; email: string; name: string }>(
      'select id, email, name from customer where app_id = ? order by email',
      [appId],
    );
    expect(customers.map((c) => c.id).sort()).toEqual([...bystanderIds].sort());

    // Their stored answers are untouched, and each key still replays.
    expect(await records()).toEqual(recordsBefore);
    for (const person of people) {
      const again = await create(person, person.key);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(person.answer);
    }
    const graphqlAgain = await graphqlSend();
    expect(graphqlAgain.headers['idempotent-replayed']).toBe('true');
    expect(graphqlAgain.body).toEqual(graphqlFirst.body);
  });

  it('leaves no personal value in any table, and every kept answer of the customer answers 409 without running', async () => {
    const { appId, apiKey } = await server.createApp();
    const endpoint = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: `${receiver.url}/erased` });
    expect(endpoint.status).toBe(201);
    const m = randomBytes(5).toString('hex');
    const email = `Ilkay.${m}@Example.com`;
    const name = `İlkay Erasable ${m}`;
    const marker = `meta-marker-${m}`;
    const renamed = `Renamed ${m}`;
    const renamedMarker = `second-marker-${m}`;

    type Send = () => Promise<{ status: number; body: any; headers: Record<string, string> }>;
    const sends: { what: string; send: Send }[] = [];
    const keyed = (what: string, send: (key: string) => Send) => {
      const key = randomUUID();
      sends.push({ what, send: send(key) });
    };
    const rest = (key: string, path: string, body: object) => () =>
      server.http.post(path).set(auth(apiKey)).set('idempotency-key', key).send(body);
    const graphql = (key: string, query: string, variables: object) => () =>
      server.http.post('/graphql').set(auth(apiKey)).set('idempotency-key', key).send({ query, variables });

    // GraphQL, metadata alone: neither the request nor the answer names an id, an e-mail or a name.
    keyed('GraphQL createCustomer { metadata }', (key) =>
      graphql(key, 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { metadata } }', {
        input: { email, name, metadata: { note: marker } },
      }),
    );
    const first = await sends[0]!.send();
    expect(first.body).toEqual({ data: { createCustomer: { metadata: { note: marker } } } });
    const [{ id }] = await sql<{ id: string }>('select id from customer where app_id = ?', [appId]);
    // REST: a refusal whose message holds the address (a 4xx answer is kept), with no id anywhere.
    keyed('REST POST /v1/customers refused for its e-mail', (key) =>
      rest(key, '/v1/customers', { email: email.toLowerCase(), name: 'Someone Else' }),
    );
    // REST: a repeat of a request naming the customer in its body.
    keyed('REST POST naming the customer in its body', (key) =>
      rest(key, '/v1/customers', { email: `other-${m}@example.com`, metadata: { about: id } }),
    );
    // GraphQL selections with and without the id, the id in variables or in the document.
    keyed('GraphQL updateCustomer { id email name metadata }', (key) =>
      graphql(
        key,
        'mutation($id: ID!, $name: String) { updateCustomer(id: $id, input: { name: $name }) { id email name metadata } }',
        { id, name: renamed },
      ),
    );
    keyed('GraphQL updateCustomer { name } with the id in the document', (key) =>
      graphql(
        key,
        `mutation { updateCustomer(id: "${id}", input: { metadata: { second: "${renamedMarker}" } }) { name } }`,
        {},
      ),
    );
    keyed('GraphQL updateCustomer { metadata }', (key) =>
      graphql(
        key,
        'mutation($id: ID!) { updateCustomer(id: $id, input: { metadata: { third: true } }) { metadata } }',
        {
          id,
        },
      ),
    );
    const answers = [first];
    for (const { send } of sends.slice(1)) answers.push(await send());
    expect(answers[1]!.status).toBe(409);
    expect(answers[1]!.body.message).toBe(`A customer with e-mail ${email.toLowerCase()} already exists`);
    expect(answers.slice(2).map((a) => a.status)).toEqual([201, 200, 200, 200]);
    expect(answers[3]!.body.data.updateCustomer).toMatchObject({ id, email, name: renamed });
    const stored = await sql<{ n: string }>(
      'select count(*) as n from idempotency_record where app_id = ? and response_body is not null',
      [appId],
    );
    expect(stored).toEqual([{ n: String(sends.length) }]);
    const needles = [email, name, marker, renamed, renamedMarker];
    expect((await personalDataLeft(needles)).length).toBeGreaterThan(0);
    const otherId = answers[2]!.body.id as string;

    const res = await server.http.delete(`/v1/customers/${id}`).set(auth(apiKey));
    expect(res.status).toBe(200);

    expect(await personalDataLeft(needles)).toEqual([]);
    // Tombstones: credential and key only.
    const tombstones = await sql<Record<string, unknown>>(
      `select fingerprint, response_status, response_body, customer_ids from idempotency_record
        where app_id = ? and erased_at is not null`,
      [appId],
    );
    expect(tombstones).toEqual(
      sends.map(() => ({ fingerprint: '', response_status: null, response_body: null, customer_ids: [] })),
    );
    const customersBefore = await sql<{ id: string }>('select id from customer where app_id = ?', [appId]);
    expect(customersBefore.map((c) => c.id)).toEqual([otherId]);
    for (const { what, send } of sends) {
      const again = await send();
      expect({ what, status: again.status }).toEqual({ what, status: 409 });
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      const message = again.body.message ?? again.body.errors?.[0]?.message;
      expect(message).toContain(ERASED);
    }
    // Nothing ran: no customer made again, no event recorded after the deletion's.
    expect(await sql<{ id: string }>('select id from customer where app_id = ?', [appId])).toEqual(
      customersBefore,
    );
    const types = await sql<{ type: string }>(
      'select type from webhook_event where app_id = ? and subject_ids @> ?::jsonb order by created_at',
      [appId, JSON.stringify([id])],
    );
    expect(types).toEqual([{ type: 'customer.deleted' }]);
    expect(await personalDataLeft(needles)).toEqual([]);
  }, 120_000);
});
