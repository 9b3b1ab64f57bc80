import { Controller, Get, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { SessionOrServiceKey } from '../common/route-auth.decorators';
import { EXPLAIN_STEPS, ExplainResponse } from './explain.dto';
import { ExplainService } from './explain.service';
import { OrganisationQuery } from './licensing.dto';

@ApiTags('licensing')
@Controller('api/licensing')
export class ExplainController {
  constructor(private readonly explainer: ExplainService) {}

  @Get('explain')
  @SessionOrServiceKey()
  @ApiOperation({
    summary: 'Why an organisation has the license it has (member session or service key)',
    description:
      'The chain that decides the tier and flags, newest first: grace, the subscription chosen and how its tier was resolved, ' +
      'the events that set it, and why each other subscription was not chosen; and the credit grants that count, in the order they are ' +
      'drawn on. For support ("why is Acme on free?").',
  })
  @ApiExtraModels(...EXPLAIN_STEPS)
  @ApiOkResponse({ type: ExplainResponse })
  @ApiErrors(400, 401, 403, 404)
  explain(@CurrentUser() user: AuthUser | undefined, @Query() query: OrganisationQuery): Promise<ExplainResponse> {
    return this.explainer.explain(query.organisation_id, user?.id ?? null);
  }
}
