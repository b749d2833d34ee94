import { pino } from 'pino';
import { createLogger, REDACTED_PATHS } from '../../src/infra/logger.js';
import { logLines } from '../helpers/log-lines.js';

class Holder {
  constructor(
    readonly token: string | undefined,
    readonly label: string,
  ) {}
}

/** What each case logs, through a logger's `info` and through a child bound to `bindings`. */
const cases: Array<{ bindings?: Record<string, unknown>; object?: unknown; msg?: string }> = [
  { object: { req: { id: 'r1', method: 'GET', url: '/v1/x' }, res: { statusCode: 200 }, responseTime: 1 } },
  {
    object: { res: { statusCode: 503 }, outage: { reason: 'database_unavailable' } },
    msg: 'request completed',
  },
  { object: { req: { headers: { authorization: 'Bearer tg_sk_x', cookie: 'a=b', host: 'h' } } } },
  { object: { res: { headers: { 'set-cookie': 'sid=1', 'content-type': 'x' } } } },
  { object: { call: { token: 'tg_st_1', apiKey: 'tg_sk_2', other: 1 }, list: [{ token: 'nested' }] } },
  { object: { input: { password: 'p', secret: 's', sessionToken: 't', 'stripe-signature': 'v1=1' } } },
  { object: { err: { type: 'Error', message: 'boom', body: 'raw body', rawPacket: 'bytes' } } },
  { object: { error: new Error('plain error') } },
  { object: { holder: new Holder('tg_sk_secret', 'h'), empty: new Holder(undefined, 'e') } },
  { object: { items: [1, 'two', null, { three: 3 }], nothing: null, n: Number.NaN, flag: true } },
  { object: { created: new Date(0), inherited: Object.create({ token: 'from prototype' }) } },
  { object: { nested: { deeper: { token: 'below the first level' } } } },
  { msg: 'message only' },
  { bindings: { req: { id: 'r2', method: 'POST', url: '/graphql' } }, object: { extra: 1 }, msg: 'child' },
  { bindings: { req: { headers: { authorization: 'Bearer x' } }, creds: { apiKey: 'k' } }, msg: 'child' },
];

describe('log redaction', () => {
  it('writes every line exactly as pino with the same redaction options does', () => {
    const ours = logLines();
    const reference = logLines();
    const loggers = [
      createLogger('info', ours.stream),
      pino(
        {
          level: 'info',
          base: { service: 'tollgate' },
          timestamp: pino.stdTimeFunctions.isoTime,
          redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
        },
        reference.stream,
      ),
    ];
    for (const logger of loggers) {
      for (const { bindings, object, msg } of cases) {
        const target = bindings ? logger.child(bindings) : logger;
        if (object === undefined) target.info(msg);
        else target.info(object, msg);
      }
    }
    const withoutTime = (line: string) => line.replace(/"time":"[^"]*"/, '"time":""');
    expect(ours.lines).toHaveLength(cases.length);
    expect(ours.lines.map(withoutTime)).toEqual(reference.lines.map(withoutTime));
    const all = ours.lines.join('\n');
    for (const secret of ['tg_sk_x', 'a=b', 'sid=1', 'tg_st_1', 'raw body', 'bytes', 'v1=1', 'tg_sk_secret'])
      expect(all).not.toContain(secret);
  });
});
