import {
  type OperatorServer,
  type OperatorSession,
  operatorGraphql,
  startOperatorServer,
} from '../helpers/operators.js';
import { runCli } from '../helpers/process.js';

/**
 * `tollgate operators add|list|remove` against a database of its own (the last owner is this file's).
 * The steps build on each other, one or two commands each (a command is a process of its own).
 */

let ops: OperatorServer;
const env = () => ({ DATABASE_URL: ops.databaseUrl, LOG_LEVEL: 'warn' });

beforeAll(async () => {
  ops = await startOperatorServer();
});
afterAll(async () => {
  await ops.close();
});

describe('tollgate operators', () => {
  let owner: { id: string; email: string; role: string; createdAt: string };
  let session: OperatorSession;

  it('adds an operator, who can sign in at once, and lists it', async () => {
    const added = await runCli(
      ['operators', 'add', '--email', 'Cli.Owner@example.com', '--role', 'owner'],
      env(),
    );
    expect([added.code, added.stderr]).toEqual([0, '']);
    owner = JSON.parse(added.stdout);
    expect(owner).toEqual({
      id: expect.stringMatching(/^op_/),
      email: 'Cli.Owner@example.com',
      role: 'owner',
      createdAt: expect.any(String),
    });
    const listed = await runCli(['operators', 'list'], env());
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([owner]);
    session = await ops.signIn('cli.owner@example.com');
    expect(session.operator).toEqual({ id: owner.id, email: 'Cli.Owner@example.com', role: 'owner' });
  });

  it('refuses to remove the last owner, and an unknown role', async () => {
    const last = await runCli(['operators', 'remove', '--email', 'cli.owner@example.com'], env());
    expect([last.code, last.stderr]).toEqual([1, 'tollgate: The last owner cannot be removed or demoted\n']);
    const badRole = await runCli(['operators', 'add', '--email', 'x@example.com', '--role', 'root'], env());
    expect([badRole.code, badRole.stderr]).toEqual([1, 'tollgate: role: must be owner, admin or viewer\n']);
  });

  it('removes an operator once another owner exists, ending its session at once', async () => {
    await ops.addOperator('second@example.com', 'owner');
    const removed = await runCli(['operators', 'remove', '--email', 'CLI.OWNER@example.com'], env());
    expect([removed.code, JSON.parse(removed.stdout)]).toEqual([0, { id: owner.id }]);
    // Removed by another process: the session it had stops at once.
    expect((await operatorGraphql(ops.server, session, '{ apps { id } }')).status).toBe(401);
  });

  it('says so when there is no such operator', async () => {
    const unknown = await runCli(['operators', 'remove', '--email', 'nobody@example.com'], env());
    expect([unknown.code, unknown.stderr]).toEqual([1, 'tollgate: Operator nobody@example.com not found\n']);
  });
});
