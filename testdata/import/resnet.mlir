// RUN: import models/resnet.pt2
