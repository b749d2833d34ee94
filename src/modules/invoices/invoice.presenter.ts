import type { ProviderInvoice } from '../payments/payment-provider.js';

/** The Invoice object of the REST API (Tollgate's choice beyond `created`, `amountPaid`, `status`). */
export interface InvoiceJson {
  readonly id: string;
  readonly created: string;
  readonly amountPaid: number;
  readonly currency: string;
  readonly status: string | null;
  readonly hostedInvoiceUrl: string | null;
}

export function presentInvoice(invoice: ProviderInvoice): InvoiceJson {
  return {
    id: invoice.id,
    created: new Date(invoice.created).toISOString(),
    amountPaid: invoice.amountPaid,
    currency: invoice.currency,
    status: invoice.status,
    hostedInvoiceUrl: invoice.hostedInvoiceUrl,
  };
}
