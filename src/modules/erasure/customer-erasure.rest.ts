import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentDeletedCustomer } from './customer-erasure.presenter.js';
import type { CustomerErasureService } from './customer-erasure.service.js';

/** `DELETE /v1/customers/:id`: parse → CustomerErasureService → presenter. */
export function customerErasureRouter(erasure: CustomerErasureService): Router {
  const router = strictRouter();
  router.delete('/customers/:id', async (req, res) => {
    res.json(presentDeletedCustomer(await erasure.deleteCustomer(req.principal, req.params.id)));
  });
  return router;
}
