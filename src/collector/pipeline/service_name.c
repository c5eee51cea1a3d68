// SPDX-License-Identifier: MIT
/*
 * service_name.c - a process's service.name (contract: service_name.h).
 */
#include <string.h>

#include "collector/pipeline/service_name.h"

const char *sp_service_name__env_value(const struct sp_proc_env_ident *env, const char *key)
{
	for (uint32_t i = 0; env && i < env->n_attrs; i++)
		if (!strcmp(env->keys[i], key))
			return env->values[i];
	return NULL;
}

const char *sp_service_name__resolve(const struct sp_proc_env_ident *env, const char *ctx_name)
{
	const char *svc = NULL;

	if (env)
		svc = env->service_name ? env->service_name
					: sp_service_name__env_value(env, SP_SERVICE_NAME_KEY);
	return svc ? svc : ctx_name;
}
