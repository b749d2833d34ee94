import { eventually } from './eventually.js';
import type { TestServer } from './server.js';

/**
 * Waits until some session waits for a lock held by the backend `pid` (`what` names the waiter). Asked on
 * the server's pool, outside any transaction: a session inside one sees `pg_stat_activity` as it was
 * when its transaction first read it, and would miss a waiter that connected later.
 */
export async function blockedBy(server: TestServer, pid: number, what: string): Promise<void> {
  await eventually(
    async () => {
      const rows = await server.deps.orm.em
        .fork()
        .getConnection()
        .execute('select 1 from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [pid]);
      return rows.length > 0 ? true : undefined;
    },
    { what },
  );
}
