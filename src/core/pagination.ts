import { z } from 'zod';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** Accepts numbers or their decimal string form (query strings), rejecting anything else by name. */
const nonNegativeInt = (field: string, max?: number) =>
  z
    .union([z.number(), z.string().regex(/^\d+$/, `${field} must be a non-negative integer`)])
    .transform(Number)
    .pipe(
      max === undefined
        ? z
            .number()
            .int(`${field} must be a non-negative integer`)
            .min(0, `${field} must be a non-negative integer`)
            .max(Number.MAX_SAFE_INTEGER, `${field} is too large`)
        : z
            .number()
            .int(`${field} must be an integer between 1 and ${max}`)
            .min(1, `${field} must be an integer between 1 and ${max}`)
            .max(max, `${field} must be an integer between 1 and ${max}`),
    );

export const paginationSchema = {
  limit: nonNegativeInt('limit', MAX_LIMIT).default(DEFAULT_LIMIT),
  offset: nonNegativeInt('offset').default(0),
};

export interface Page<T> {
  readonly data: readonly T[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
}
