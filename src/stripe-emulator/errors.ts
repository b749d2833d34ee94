/** Stripe's error body, so the SDK raises the same typed errors against the emulator as against Stripe. */

export class StripeApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: { type?: string; code?: string; param?: string } = {},
  ) {
    super(message);
  }

  get body(): Record<string, unknown> {
    return {
      error: {
        type: this.extra.type ?? 'invalid_request_error',
        message: this.message,
        ...(this.extra.code
          ? {
              code: this.extra.code,
              doc_url: `https://stripe.com/docs/error-codes/${this.extra.code.replaceAll('_', '-')}`,
            }
          : {}),
        ...(this.extra.param ? { param: this.extra.param } : {}),
      },
    };
  }
}

export const missing = (kind: string, id: string, param = 'id') =>
  new StripeApiError(404, `No such ${kind}: '${id}'`, { code: 'resource_missing', param });

export const invalid = (message: string, param?: string) =>
  new StripeApiError(400, message, { code: param ? 'parameter_invalid' : undefined, param });
