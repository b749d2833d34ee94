import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import request from 'supertest';
import { segmentDispatch } from '../../src/infra/segment-dispatch.js';
import { strictRouter } from '../../src/infra/strict-router.js';

/**
 * The /v1 dispatch enters only the routers whose paths start with the request's first segment; every
 * answer must be the one the routers mounted one after another would give.
 */
describe('segmentDispatch', () => {
  const entered: string[] = [];

  /** `router`, noting each request it is handed. */
  function noted(name: string, router: Router): Router {
    const handle = (req: Request, res: Response, next: NextFunction) => {
      entered.push(name);
      router(req, res, next);
    };
    return Object.assign(handle, { stack: router.stack }) as unknown as Router;
  }

  function appOf(routers: Router[]) {
    const app = express();
    app.use(segmentDispatch(routers));
    app.use((req, res) => {
      res.status(404).json({ path: req.path });
    });
    app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).json({ error: error.message });
    });
    return app;
  }

  function app() {
    const customers = strictRouter();
    customers.get('/customers/:id', (req, res) => {
      res.json({ by: 'customers', id: req.params.id });
    });
    const entitlements = strictRouter();
    entitlements.get('/entitlements', (_req, res) => {
      res.json({ by: 'entitlements' });
    });
    entitlements.get('/entitlements/check/:feature', (_req, _res, next) => next());
    // Shares the segment: reached when the router before it passes the request on.
    const later = strictRouter();
    later.get('/entitlements/check/:feature', (req, res) => {
      res.json({ by: 'later', feature: req.params.feature });
    });
    const auth = strictRouter();
    auth.use('/apps/:appId/auth', (_req, res, next) => {
      res.setHeader('Cache-Control', 'no-store');
      next();
    });
    auth.get('/apps/:appId/auth/session', (_req, res) => {
      res.json({ by: 'auth' });
    });
    // A parameter first: the index cannot tell which paths it answers, so every request enters it.
    const anywhere = strictRouter();
    anywhere.get('/:anything/probe', (req, res) => {
      res.json({ by: 'anywhere', anything: req.params.anything });
    });
    const failing = strictRouter();
    failing.get('/boom', () => {
      throw new Error('boom');
    });
    return appOf([
      noted('customers', customers),
      noted('entitlements', entitlements),
      noted('anywhere', anywhere),
      noted('later', later),
      noted('auth', auth),
      noted('failing', failing),
    ]);
  }

  beforeEach(() => {
    entered.length = 0;
  });

  it('answers each path from the router that owns it, trying the routers in their order', async () => {
    const server = app();
    await request(server).get('/customers/cus_1').expect(200, { by: 'customers', id: 'cus_1' });
    expect(entered).toEqual(['customers']);
    entered.length = 0;
    await request(server).get('/entitlements').expect(200, { by: 'entitlements' });
    expect(entered).toEqual(['entitlements']);
    entered.length = 0;
    await request(server).get('/entitlements/check/seats').expect(200, { by: 'later', feature: 'seats' });
    expect(entered).toEqual(['entitlements', 'anywhere', 'later']);
    entered.length = 0;
    const auth = await request(server).get('/apps/app_1/auth/session').expect(200, { by: 'auth' });
    expect(auth.headers['cache-control']).toBe('no-store');
    expect(entered).toEqual(['anywhere', 'auth']);
  });

  it('enters a router whose paths it cannot read for every path, in its place', async () => {
    const server = app();
    await request(server)
      .get('/entitlements/probe')
      .expect(200, { by: 'anywhere', anything: 'entitlements' });
    expect(entered).toEqual(['entitlements', 'anywhere']);
    entered.length = 0;
    await request(server).get('/invoices/probe').expect(200, { by: 'anywhere', anything: 'invoices' });
    expect(entered).toEqual(['anywhere']);
  });

  it('hands on an error, and lets a path no router answers, or another spelling of one, fall through', async () => {
    const server = app();
    await request(server).get('/boom').expect(500, { error: 'boom' });
    await request(server).get('/invoices').expect(404, { path: '/invoices' });
    await request(server).get('/Customers/cus_1').expect(404, { path: '/Customers/cus_1' });
    await request(server).get('/customers/cus_1/').expect(404, { path: '/customers/cus_1/' });
    await request(server).get('/').expect(404, { path: '/' });
    expect(entered).toEqual([
      'anywhere',
      'failing',
      'anywhere',
      'anywhere',
      'customers',
      'anywhere',
      'anywhere',
    ]);
  });
});
