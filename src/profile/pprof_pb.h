/* SPDX-License-Identifier: MIT */
/*
 * pprof_pb.h - short names for the protobuf-c types of google/pprof's
 * profile.proto, shared by pprof_encode.c and pprof_decode.c.  Private to
 * src/profile.
 */
#ifndef SPANPROF_PROFILE_PPROF_PB_H
#define SPANPROF_PROFILE_PPROF_PB_H

#include "pprof.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#endif /* SPANPROF_PROFILE_PPROF_PB_H */
