// SPDX-License-Identifier: MIT
//
// cxx_example.cc - libspanctx from C++: an RAII guard pairs every enter
// with its leave, even on exceptions.  Built as $(O)/spanctx-cxx-example;
// prints the traceparent of a nested span and exits 0 when the nesting
// restored the thread's context.
#include <cstdio>
#include <stdexcept>

#include "spanctx.h"

namespace {

class SpanGuard {
public:
	SpanGuard() { ok_ = spanctx_span_enter_child(&scope_) == 0; }
	explicit SpanGuard(const char *traceparent)
	{
		ok_ = spanctx_span_enter_traceparent(&scope_, traceparent) == 0;
	}
	~SpanGuard() { spanctx_span_leave(&scope_); }
	SpanGuard(const SpanGuard &) = delete;
	SpanGuard &operator=(const SpanGuard &) = delete;
	bool ok() const { return ok_; }

private:
	spanctx_scope scope_{};
	bool ok_ = false;
};

void work()
{
	SpanGuard inner;
	char tp[SPANCTX_TRACEPARENT_BUF];

	if (spanctx_current_traceparent(tp) > 0)
		std::printf("inner span: %s\n", tp);
	throw std::runtime_error("leaves the span on unwind");
}

}  // namespace

int main()
{
	static const char *const keys[] = { "http.route" };

	if (spanctx_init("cxx-example", keys, 1) != 0)
		return 1;
	{
		SpanGuard req("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
		if (!req.ok())
			return 1;
		spanctx_span_set_attr_str(0, "/cxx");
		void *outer = otel_thread_ctx_v1;
		try {
			work();
		} catch (const std::exception &) {
		}
		if (otel_thread_ctx_v1 != outer)
			return 1;
	}
	spanctx_shutdown();
	return otel_thread_ctx_v1 == nullptr ? 0 : 1;
}
