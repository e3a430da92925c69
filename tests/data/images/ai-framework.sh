#!/bin/sh
# The entrypoint of the seed's ai-framework:latest image (tests/integration/images_lib.sh,
# img_ai_framework): the pod gives no command, so this runs, and logs the devices it sees.
echo "ai-framework: the devices I see:"
for d in /dev/nvidia* /dev/davinci* /dev/npu* /dev/accel/* /dev/dri/*; do [ -e "$d" ] && echo "  $d"; done
env | grep _VISIBLE_DEVICES= | sort
echo "ai-framework: done"
