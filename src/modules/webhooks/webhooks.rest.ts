import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentDelivery, presentEndpoint } from './webhooks.presenter.js';
import type { EndpointWithSecret, WebhooksService } from './webhooks.service.js';

const withSecret = ({ endpoint, secret }: EndpointWithSecret) => ({
  endpoint: presentEndpoint(endpoint),
  secret,
});

/** `/v1/webhook-endpoints…` and `/v1/webhook-deliveries/:id/retry`: parse → WebhooksService → presenter. */
export function webhooksRouter(webhooks: WebhooksService): Router {
  const router = strictRouter();

  router.post('/webhook-endpoints', async (req, res) => {
    res.status(201).json(withSecret(await webhooks.createEndpoint(req.principal, req.body)));
  });

  router.get('/webhook-endpoints', async (req, res) => {
    const endpoints = await webhooks.listEndpoints(req.principal, req.query.appId);
    res.json({ data: endpoints.map(presentEndpoint) });
  });

  router.get('/webhook-endpoints/:id', async (req, res) => {
    res.json(presentEndpoint(await webhooks.getEndpoint(req.principal, req.params.id)));
  });

  router.patch('/webhook-endpoints/:id', async (req, res) => {
    res.json(presentEndpoint(await webhooks.updateEndpoint(req.principal, req.params.id, req.body)));
  });

  router.delete('/webhook-endpoints/:id', async (req, res) => {
    await webhooks.deleteEndpoint(req.principal, req.params.id);
    res.status(204).end();
  });

  router.post('/webhook-endpoints/:id/rotate-secret', async (req, res) => {
    res.json(withSecret(await webhooks.rotateSecret(req.principal, req.params.id)));
  });

  router.get('/webhook-endpoints/:id/deliveries', async (req, res) => {
    const deliveries = await webhooks.listDeliveries(req.principal, req.params.id, req.query);
    res.json({ data: deliveries.map((d) => presentDelivery(d.delivery, d.attempts)) });
  });

  router.post('/webhook-deliveries/:id/retry', async (req, res) => {
    const { delivery, attempts } = await webhooks.retryDelivery(req.principal, req.params.id);
    res.json(presentDelivery(delivery, attempts));
  });

  return router;
}
