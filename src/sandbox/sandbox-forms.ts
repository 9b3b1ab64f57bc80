import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { SANDBOX_INTERVALS, SandboxInterval } from './provider-events';
import { PORTAL_OUTCOMES, PortalOutcome } from './sandbox-portal-page';

// What the sandbox's pages accept in their queries and forms (checked by the global ValidationPipe: an unknown
// or malformed field is a 400 that changes nothing).

/** The interval and seats chosen on the checkout page (its query, and the fields of its form). */
export class PlanChoiceForm {
  @IsOptional()
  @IsIn(SANDBOX_INTERVALS)
  interval?: SandboxInterval;

  @IsOptional()
  @Matches(/^\d{1,7}$/, { message: 'seats must be a whole number' })
  seats?: string;
}

/** The checkout page's query: the choice, and `recheck` when a payment was refused because its total was not the choice's. */
export class CheckoutQuery extends PlanChoiceForm {
  @IsOptional()
  @IsIn(['1'])
  recheck?: '1';
}

/** The checkout's form: the choice, and the total (minor units) the page showed for it. */
export class CheckoutForm extends PlanChoiceForm {
  @IsOptional()
  @Matches(/^\d{1,12}$/, { message: 'total must be an amount in minor units' })
  total?: string;
}

export class ChangeForm extends PlanChoiceForm {
  @IsString()
  @MaxLength(64)
  tier: string;
}

/** A reviewed change, as its confirmation posts it: when it holds, and (now) the proration date and amount shown. */
export class ConfirmChangeForm extends ChangeForm {
  @IsOptional()
  @IsIn(['now', 'period_end'])
  when?: 'now' | 'period_end';

  @IsOptional()
  @Matches(/^\d{1,12}$/, { message: 'proration_date must be Unix seconds' })
  proration_date?: string;

  @IsOptional()
  @Matches(/^\d{1,12}$/, { message: 'amount_due must be an amount in minor units' })
  amount_due?: string;
}

export class PortalQuery {
  @IsOptional()
  @IsIn(Object.keys(PORTAL_OUTCOMES))
  done?: PortalOutcome;
}
