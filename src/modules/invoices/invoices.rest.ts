import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentInvoice } from './invoice.presenter.js';
import type { InvoicesService } from './invoices.service.js';

/** `GET /v1/invoices`: parse → InvoicesService → presenter. */
export function invoicesRouter(invoices: InvoicesService): Router {
  const router = strictRouter();

  router.get('/invoices', async (req, res) => {
    const list = await invoices.listInvoices(req.principal, req.query);
    res.json({ data: list.map(presentInvoice) });
  });

  return router;
}
